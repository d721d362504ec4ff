package convert

import (
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/resourcetotelemetry"
	"github.com/stretchr/testify/assert"
)

func TestResourceLabelsSelection(t *testing.T) {
	keys := []string{"service.name", "service.namespace", "service.instance.id", "host.name", "k8s.pod.name", "k8s.pod.uid", "a*b", "a\nb"}
	for name, tc := range map[string]struct {
		settings resourcetotelemetry.Settings
		want     []string
	}{
		"nothing set":                         {resourcetotelemetry.Settings{}, nil},
		"enabled":                             {resourcetotelemetry.Settings{Enabled: true}, keys},
		"enabled, no services":                {resourcetotelemetry.Settings{Enabled: true, ExcludeServiceAttributes: true}, []string{"host.name", "k8s.pod.name", "k8s.pod.uid", "a*b", "a\nb"}},
		"exact names":                         {resourcetotelemetry.Settings{Included: []string{"host.name", "k8s.pod"}}, []string{"host.name"}},
		"star":                                {resourcetotelemetry.Settings{Included: []string{"k8s.*"}}, []string{"k8s.pod.name", "k8s.pod.uid"}},
		"question mark":                       {resourcetotelemetry.Settings{Included: []string{"k8s.pod.u?d", "a?b"}}, []string{"k8s.pod.uid", "a*b", "a\nb"}},
		"star is not a regexp":                {resourcetotelemetry.Settings{Included: []string{"host.*e"}}, []string{"host.name"}},
		"exclusion wins":                      {resourcetotelemetry.Settings{Included: []string{"*"}, Excluded: []string{"service.*", "k8s.pod.uid"}}, []string{"host.name", "k8s.pod.name", "a*b", "a\nb"}},
		"only exclusions":                     {resourcetotelemetry.Settings{Excluded: []string{"*.*"}}, []string{"a*b", "a\nb"}},
		"included with the legacy switch off": {resourcetotelemetry.Settings{Included: []string{"host.name"}, Enabled: false}, []string{"host.name"}},
	} {
		t.Run(name, func(t *testing.T) {
			sel := NewResourceLabels(tc.settings)
			var got []string
			for _, k := range keys {
				if sel != nil && sel.Match(k) {
					got = append(got, k)
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
