// Package dashboardtest reads the Grafana dashboard deploy/dashboards writes
// (statsgate.json): its panels' PromQL and its variables, and expands the
// variables in a query as Grafana would for given values, so that tests can
// parse each query (test/promparse) and run it against a real Prometheus
// (test/fleet).
package dashboardtest

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
)

// Target is one query of a panel.
type Target struct {
	RefID  string `json:"refId"`
	Expr   string `json:"expr"`
	Legend string `json:"legendFormat"`
}

// Panel is one panel of the dashboard.
type Panel struct {
	Title   string   `json:"title"`
	Targets []Target `json:"targets"`
	Unit    string
}

// Variable is one of the dashboard's variables; Query is a query variable's
// label_values(...), a text box's default value.
type Variable struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Query string `json:"query"`
}

// Dashboard is what the tests read of statsgate.json.
type Dashboard struct {
	Panels    []Panel
	Variables []Variable
}

// Load reads the dashboard at path.
func Load(path string) (Dashboard, error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return Dashboard{}, err
	}
	var raw struct {
		Panels []struct {
			Panel
			FieldConfig struct {
				Defaults struct {
					Unit string `json:"unit"`
				} `json:"defaults"`
			} `json:"fieldConfig"`
		} `json:"panels"`
		Templating struct {
			List []Variable `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return Dashboard{}, fmt.Errorf("%s: %w", path, err)
	}
	var d Dashboard
	for _, p := range raw.Panels {
		p.Panel.Unit = p.FieldConfig.Defaults.Unit
		d.Panels = append(d.Panels, p.Panel)
	}
	d.Variables = raw.Templating.List
	if len(d.Panels) == 0 {
		return d, fmt.Errorf("%s: no panels", path)
	}
	return d, nil
}

// Value returns the default (text box) value of the variable name.
func (d Dashboard) Value(name string) (string, bool) {
	i := slices.IndexFunc(d.Variables, func(v Variable) bool { return v.Name == name })
	if i < 0 {
		return "", false
	}
	return d.Variables[i].Query, true
}

// Grafana's variable references: $name, ${name} and ${name:format}. A
// regular expression's $1 in label_replace is not one (no variable is named
// with digits alone).
var variableRef = regexp.MustCompile(`\$(?:(\w+)|\{(\w+)(?::\w+)?\})`)

// Expand replaces every variable reference in expr with its value in values
// ($__rate_interval and the dashboard's own variables alike); a reference
// to a variable values does not have is an error, but for $<digits>.
func Expand(expr string, values map[string]string) (string, error) {
	var missing []string
	out := variableRef.ReplaceAllStringFunc(expr, func(ref string) string {
		m := variableRef.FindStringSubmatch(ref)
		name := m[1] + m[2]
		if regexp.MustCompile(`^\d+$`).MatchString(name) {
			return ref
		}
		v, ok := values[name]
		if !ok {
			missing = append(missing, name)
			return ref
		}
		return v
	})
	if len(missing) > 0 {
		return out, fmt.Errorf("no value for %v in %q", missing, expr)
	}
	return out, nil
}

// LabelValuesSelector returns the series selector of a query variable's
// label_values(selector, label), "" for label_values(label).
func LabelValuesSelector(query string) (selector string, ok bool) {
	m := regexp.MustCompile(`^label_values\((?:(.*),\s*)?(\w+)\)$`).FindStringSubmatch(query)
	if m == nil {
		return "", false
	}
	return m[1], true
}
