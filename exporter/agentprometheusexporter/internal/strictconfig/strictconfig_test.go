package strictconfig

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
)

type inner struct {
	Endpoint string `mapstructure:"endpoint"`
}

type outer struct {
	Inner     inner  `mapstructure:",squash"`
	Namespace string `mapstructure:"namespace"`
	Skipped   string `mapstructure:"-"`
	Untagged  string
}

func TestCheckKeys(t *testing.T) {
	tests := []struct {
		name    string
		conf    map[string]any
		wantErr string
	}{
		{name: "own and squashed keys", conf: map[string]any{"endpoint": "x", "namespace": "y", "untagged": "z"}},
		{name: "misspelt key named", conf: map[string]any{"endpiont": "x"}, wantErr: "has invalid keys: endpiont"},
		{name: "every unknown key named, sorted", conf: map[string]any{"zz": 1, "aa": 2, "namespace": "y"}, wantErr: "has invalid keys: aa, zz"},
		{name: "ignored field is not a key", conf: map[string]any{"-": 1}, wantErr: "has invalid keys: -"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckKeys(confmap.NewFromStringMap(tt.conf), &outer{})
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.wantErr)
		})
	}
}
