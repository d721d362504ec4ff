package strictconfig

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/confmap"
)

type server struct {
	Endpoint string                       `mapstructure:"endpoint"`
	TLS      configoptional.Optional[tls] `mapstructure:"tls,omitempty"`
}

type tls struct {
	CertFile string `mapstructure:"cert_file"`
}

type limits struct {
	Timeout string `mapstructure:"timeout"`
}

type hook struct {
	ID component.ID `mapstructure:"id"`
}

type anything struct {
	Known string         `mapstructure:"known"`
	Rest  map[string]any `mapstructure:",remain"`
}

type config struct {
	Server    server            `mapstructure:",squash"`
	Namespace string            `mapstructure:"namespace"`
	Limits    limits            `mapstructure:"limits"`
	Pointer   *limits           `mapstructure:"pointer"`
	ByName    map[string]limits `mapstructure:"by_name"`
	Labels    map[string]string `mapstructure:"labels"`
	Hooks     []hook            `mapstructure:"hooks"`
	Names     []string          `mapstructure:"names"`
	Anything  anything          `mapstructure:"anything"`
	Skipped   string            `mapstructure:"-"`
	Untagged  string
	hidden    string // unexported: not a key
}

func TestCheckKeys(t *testing.T) {
	tests := []struct {
		name    string
		conf    map[string]any
		wantErr string
	}{
		{name: "every kind of key, spelt right", conf: map[string]any{
			"endpoint":  "x",
			"tls":       map[string]any{"enabled": true, "cert_file": "c"},
			"namespace": "y",
			"limits":    map[string]any{"timeout": "1s"},
			"pointer":   map[string]any{"timeout": "1s"},
			"by_name":   map[string]any{"a": map[string]any{"timeout": "1s"}},
			"labels":    map[string]any{"any": "name"},
			"hooks":     []any{map[string]any{"id": "bearertokenauth/x"}},
			"names":     "a,b",
			"anything":  map[string]any{"known": "k", "whatever": map[string]any{"deep": 1}},
			"Untagged":  "z",
		}},
		{name: "null sections", conf: map[string]any{"tls": nil, "limits": nil, "hooks": nil}},
		{name: "misspelt top-level key", conf: map[string]any{"endpiont": "x"}, wantErr: "has invalid keys: endpiont"},
		{name: "every unknown key named, sorted", conf: map[string]any{"zz": 1, "aa": 2, "namespace": "y"}, wantErr: "has invalid keys: aa, zz"},
		{name: "misspelt nested key named with its path", conf: map[string]any{"limits": map[string]any{"timeuot": "1s"}}, wantErr: "has invalid keys: limits::timeuot"},
		{name: "misspelt key in a pointer to a struct", conf: map[string]any{"pointer": map[string]any{"timeuot": "1s"}}, wantErr: "has invalid keys: pointer::timeuot"},
		{name: "misspelt key in an optional section of a squashed struct", conf: map[string]any{"tls": map[string]any{"cert_fiel": "c"}}, wantErr: "has invalid keys: tls::cert_fiel"},
		{name: "misspelt enabled of an optional section", conf: map[string]any{"tls": map[string]any{"enabeld": true}}, wantErr: "has invalid keys: tls::enabeld"},
		{name: "misspelt key in a map of structs", conf: map[string]any{"by_name": map[string]any{"a": map[string]any{"timeuot": "1s"}}}, wantErr: "has invalid keys: by_name::a::timeuot"},
		{name: "misspelt key in a list of structs", conf: map[string]any{"hooks": []any{map[string]any{"id": "a"}, map[string]any{"idd": "b"}}}, wantErr: "has invalid keys: hooks[1]::idd"},
		{name: "an ignored field is not a key", conf: map[string]any{"-": 1}, wantErr: "has invalid keys: -"},
		{name: "an untagged field's key is its Go name, case-sensitive", conf: map[string]any{"untagged": "z"}, wantErr: "has invalid keys: untagged"},
		{name: "an unexported field is not a key", conf: map[string]any{"hidden": "z"}, wantErr: "has invalid keys: hidden"},
		{name: "keys at several depths at once", conf: map[string]any{
			"namepsace": "y", "limits": map[string]any{"timeuot": "1s"}, "tls": map[string]any{"cert_fiel": "c"},
		}, wantErr: "has invalid keys: limits::timeuot, namepsace, tls::cert_fiel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckKeys(confmap.NewFromStringMap(tt.conf), &config{})
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.wantErr)
		})
	}
}

func TestCheckKeysLeavesTheConfigurationAsItIs(t *testing.T) {
	conf := confmap.NewFromStringMap(map[string]any{"tls": map[string]any{"enabled": false, "cert_file": "c"}})
	require.NoError(t, CheckKeys(conf, &config{}))
	assert.Equal(t, false, conf.Get("tls::enabled"))
}
