// Package strictconfig rejects configuration keys that no field of a
// component's Config decodes.
//
// confmap decodes the rest of a struct with IgnoreUnused as soon as one of its
// squashed fields has its own Unmarshal method, as confighttp.ServerConfig
// does. A squashed server config therefore makes a misspelt key of the
// component pass silently; this package restores the check.
package strictconfig // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/strictconfig"

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/confmap"
)

// CheckKeys returns an error naming every top-level key of conf that is not a
// mapstructure key of cfg's struct type (squashed fields included).
func CheckKeys(conf *confmap.Conf, cfg any) error {
	known := map[string]bool{}
	collectKeys(reflect.TypeOf(cfg), known)
	var unknown []string
	for key := range conf.ToStringMap() {
		if !known[key] {
			unknown = append(unknown, key)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return fmt.Errorf("has invalid keys: %s", strings.Join(unknown, ", "))
}

func collectKeys(t reflect.Type, known map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		parts := strings.Split(f.Tag.Get("mapstructure"), ",")
		switch {
		case slices.Contains(parts[1:], "squash"):
			collectKeys(f.Type, known)
		case parts[0] == "-":
		case parts[0] == "":
			known[strings.ToLower(f.Name)] = true
		default:
			known[parts[0]] = true
		}
	}
}
