package cardinality // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/cardinality"

import (
	"regexp"
	"strconv"
	"strings"
)

// Suggestion is the aggregate rule that would sum a family's exploding
// label away, in the names the agents send.
type Suggestion struct {
	// Label is the label as the family has it; Metric and Key are the OTLP
	// metric name and point attribute key it was made from.
	Label  string `json:"label"`
	Metric string `json:"metric"`
	Key    string `json:"key"`
	// YAML is the rule as the exporter's configuration writes it, to paste
	// under the exporter (or its item under an aggregate list already there).
	YAML string `json:"yaml"`
}

// A label explodes when most series scanned have a value of their own
// (Ratio >= explodingRatio; an identifier, a value per series, is at 1) and
// it has explodingDistinct values or more. The ratio tells an identifier
// from a bounded label: a label of k values is at k / series, which falls
// as its family grows, while a value per request, user or session keeps it
// near 1 however many series there are. The count keeps the suggestion to
// where a rule is worth it: in a family of a few dozen series every label
// may be near 1.
const (
	explodingRatio    = 0.5
	explodingDistinct = 100
)

// suggest returns the rule that sums away the first-ranked label of a
// family that explodes and that a rule can sum away: job, instance and the
// labels Origin does not know (resource, scope and constant labels) name
// the agent, not what it counts, and are passed over; they come first in a
// family of one series per agent, tied with the attribute that makes it.
// Nil when no such label explodes.
func (v *View) suggest(family string, labels []Label) *Suggestion {
	if v.opts.Origin == nil {
		return nil
	}
	for _, l := range labels {
		// By distinct values, of one count of series: the ratio falls too.
		if l.Distinct < explodingDistinct || l.Ratio < explodingRatio {
			return nil
		}
		if l.Name == "job" || l.Name == "instance" {
			continue
		}
		if metric, key, ok := v.opts.Origin(family, l.stored); ok {
			return &Suggestion{Label: l.Name, Metric: metric, Key: key, YAML: ruleYAML(metric, key)}
		}
	}
	return nil
}

// ruleYAML is the rule that sums key away from metric, as a block for the
// exporter's configuration. The metric name goes in as it is: a name with
// * or ? (which OTLP names do not have) would match more than itself.
func ruleYAML(metric, key string) string {
	return "aggregate:\n  - metrics: [" + yamlScalar(metric) + "]\n    without: [" + yamlScalar(key) + "]\n"
}

// plainScalar is what YAML reads as the same string unquoted in a flow
// sequence: no indicator, no number, no space.
var plainScalar = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_./-]*$`)

// yamlScalar writes s plain when it can, double-quoted otherwise (Go's
// escapes are YAML's for valid UTF-8). The words YAML 1.1 reads as booleans
// or null are quoted too.
func yamlScalar(s string) string {
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null":
		return strconv.Quote(s)
	}
	if plainScalar.MatchString(s) {
		return s
	}
	return strconv.Quote(s)
}
