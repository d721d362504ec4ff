// Package strictconfig rejects configuration keys that no field of a
// component's Config decodes, at any depth.
//
// confmap checks unknown keys itself, but stops doing so in two places that
// a component's configuration reaches:
//   - when a struct has a squashed field with its own Unmarshal method, as
//     confighttp.ServerConfig has since v0.162, confmap decodes the struct's
//     other fields with IgnoreUnused (confmap internal/decoder.go,
//     unmarshalerEmbeddedStructsHookFunc), and that option holds for every
//     struct below them: `scrape: {timeuot: 5s}` passes silently;
//   - confighttp.ServerConfig.Unmarshal decodes the server settings with
//     WithIgnoreUnused, so a misspelt key in a plain nested struct of the
//     server (e.g. `dialer`, `middlewares`) passes silently too.
//
// CheckKeys walks the configuration along the Config's type and names every
// key that no field decodes, with its path.
package strictconfig // import "github.com/statsgate/statsgate/internal/strictconfig"

import (
	"encoding"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/confmap"
)

// CheckKeys returns an error naming every key of conf, at any depth, that no
// mapstructure field of cfg's type decodes: "has invalid keys: scrape::timeuot".
func CheckKeys(conf *confmap.Conf, cfg any) error {
	var unknown []string
	walk("", conf.ToStringMap(), reflect.TypeOf(cfg), &unknown)
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return fmt.Errorf("has invalid keys: %s", strings.Join(unknown, ", "))
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// walk checks value, found at path, against the type t that decodes it.
// Values whose shape does not match t (a string for a list, a map for a
// custom slice type) are left to the decoder, which knows their rules.
func walk(path string, value any, t reflect.Type, unknown *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	// Decoded from text (component.ID, enums): a scalar, whatever its kind.
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		return
	}
	if inner, ok := optionalValue(t); ok {
		// configoptional.Optional[T] decodes T and takes one key of its own.
		if m, isMap := value.(map[string]any); isMap {
			if _, set := m["enabled"]; set {
				m = maps.Clone(m) // the caller's map stays as it is
				delete(m, "enabled")
			}
			value = m
		}
		walk(path, value, inner, unknown)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := value.(map[string]any)
		if !ok {
			return
		}
		fields := map[string]reflect.Type{}
		if collectFields(t, fields) {
			return // a ",remain" field takes every other key
		}
		for key, v := range m {
			ft, known := fields[key]
			if !known {
				*unknown = append(*unknown, path+key)
				continue
			}
			walk(path+key+"::", v, ft, unknown)
		}
	case reflect.Map:
		m, ok := value.(map[string]any)
		if !ok || t.Key().Kind() != reflect.String {
			return
		}
		for key, v := range m {
			walk(path+key+"::", v, t.Elem(), unknown)
		}
	case reflect.Slice, reflect.Array:
		list, ok := value.([]any)
		if !ok {
			return
		}
		prefix := strings.TrimSuffix(path, "::")
		for i, v := range list {
			walk(prefix+"["+strconv.Itoa(i)+"]::", v, t.Elem(), unknown)
		}
	}
}

// collectFields adds the keys of struct type t (squashed fields included) and
// the types that decode them to fields, and reports whether t has a ",remain"
// field.
func collectFields(t reflect.Type, fields map[string]reflect.Type) (remain bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		parts := strings.Split(f.Tag.Get("mapstructure"), ",")
		opts := parts[1:]
		switch {
		case slices.Contains(opts, "remain"):
			remain = true
		case slices.Contains(opts, "squash"):
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && collectFields(ft, fields) {
				remain = true
			}
		case parts[0] == "-":
		case parts[0] == "":
			// confmap matches names case-sensitively: an untagged field's
			// key is its Go name.
			fields[f.Name] = f.Type
		default:
			fields[parts[0]] = f.Type
		}
	}
	return remain
}

// optionalValue returns T for configoptional.Optional[T].
func optionalValue(t reflect.Type) (reflect.Type, bool) {
	if t.Kind() != reflect.Struct ||
		t.PkgPath() != "go.opentelemetry.io/collector/config/configoptional" ||
		!strings.HasPrefix(t.Name(), "Optional[") {
		return nil, false
	}
	f, ok := t.FieldByName("value")
	if !ok {
		return nil, false
	}
	return f.Type, true
}
