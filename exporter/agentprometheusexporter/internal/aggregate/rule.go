package aggregate // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// The attribute keys with a meaning of their own in by and without.
const (
	ServiceName       = "service.name"
	ServiceNamespace  = "service.namespace"
	ServiceInstanceID = "service.instance.id"
	// The scope's name, version and schema URL, which the exporter writes as
	// otel_scope_name, otel_scope_version and otel_scope_schema_url, as the
	// OpenTelemetry Prometheus compatibility spec names them.
	ScopeName      = "otel.scope.name"
	ScopeVersion   = "otel.scope.version"
	ScopeSchemaURL = "otel.scope.schema_url"
)

// GaugeFunc is how a rule combines the gauges of a group.
type GaugeFunc uint8

const (
	GaugeSum GaugeFunc = iota
	GaugeMax
	GaugeMin
)

func (g GaugeFunc) String() string { return [...]string{"sum", "max", "min"}[g] }

// RuleConfig is one rule as the configuration writes it.
type RuleConfig struct {
	// Metrics are OTLP metric names; * and ? are wildcards.
	Metrics []string `mapstructure:"metrics"`
	// By lists the attribute keys a group keeps: every other one is summed
	// away. Without lists the ones summed away. One of the two.
	By      []string `mapstructure:"by"`
	Without []string `mapstructure:"without"`
	// Gauge is how the gauges of a group combine: sum (the default), max or min.
	Gauge string `mapstructure:"gauge"`
}

// Check reports what makes the rule unusable, each error naming its key.
// (Not Validate: the exporter's Config.Validate calls it and names the rule
// by its place, which confmap's walk of nested validators would repeat.)
func (c RuleConfig) Check() error {
	var errs []error
	if len(c.Metrics) == 0 {
		errs = append(errs, errors.New("metrics: must list at least one metric name or pattern"))
	}
	for i, m := range c.Metrics {
		if strings.TrimSpace(m) == "" {
			errs = append(errs, fmt.Errorf("metrics[%d]: must not be empty", i))
		}
	}
	switch {
	case c.By != nil && c.Without != nil:
		errs = append(errs, errors.New("by and without: set one of them, not both"))
	case c.By == nil && c.Without == nil:
		errs = append(errs, errors.New("by or without: set one of them (by: the attributes a group keeps; without: the ones summed away)"))
	}
	keys, what := c.By, "by"
	if c.By == nil {
		keys, what = c.Without, "without"
	}
	seen := map[string]bool{}
	for i, k := range keys {
		switch {
		case k == "":
			errs = append(errs, fmt.Errorf("%s[%d]: must not be empty", what, i))
		case seen[k]:
			errs = append(errs, fmt.Errorf("%s[%d]: %q is listed twice", what, i, k))
		case what == "by" && k == ServiceInstanceID:
			errs = append(errs, fmt.Errorf("by[%d]: %s cannot be kept: an aggregated series has no instance of its own (Prometheus gives it the replica's); leave the rule out to keep each agent's series", i, k))
		}
		seen[k] = true
	}
	if what == "by" && seen[ServiceNamespace] && !seen[ServiceName] {
		errs = append(errs, fmt.Errorf("by: %s is kept only as part of job: keep %s too", ServiceNamespace, ServiceName))
	}
	switch c.Gauge {
	case "", "sum", "max", "min":
	default:
		errs = append(errs, fmt.Errorf("gauge: unknown function %q (want sum, max or min)", c.Gauge))
	}
	return errors.Join(errs...)
}

// Rule is a compiled rule.
type Rule struct {
	// Index is the rule's position in the configuration.
	Index int
	// Config is the rule as configured, for the cardinality view.
	Config RuleConfig
	Gauge  GaugeFunc

	exact    map[string]bool
	patterns []*regexp.Regexp
	by       bool
	keys     map[string]bool

	// sources counts the sources whose group is the rule's.
	sources atomic.Int64
}

// Sources is the number of sources held that add to the rule's groups.
func (r *Rule) Sources() int64 { return r.sources.Load() }

// Keeps reports whether a group keeps the attribute key: service.name for
// job, and never service.instance.id, whose instance each replica's target
// gives the aggregate.
func (r *Rule) Keeps(key string) bool {
	if key == ServiceInstanceID {
		return false
	}
	return r.keys[key] == r.by
}

// By reports whether the rule lists the keys it keeps (by), rather than
// those it sums away (without).
func (r *Rule) By() bool { return r.by }

// Matches reports whether the rule takes the OTLP metric name.
func (r *Rule) Matches(name string) bool {
	if r.exact[name] {
		return true
	}
	for _, re := range r.patterns {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

// Rules are the compiled rules; the first that matches a metric takes it.
type Rules struct {
	rules []*Rule

	mu    sync.RWMutex
	cache map[string]int // metric name -> rule index, -1 for none
}

// maxCachedNames bounds the names whose match is remembered: agents send a
// few hundred metric names, a flood of names is matched each time.
const maxCachedNames = 16384

// Compile compiles validated rules; glob turns a pattern with * and ? into
// a regular expression anchored at both ends.
func Compile(configs []RuleConfig, glob func(string) (*regexp.Regexp, error)) (*Rules, error) {
	rs := &Rules{cache: map[string]int{}}
	for i, c := range configs {
		if err := c.Check(); err != nil {
			return nil, fmt.Errorf("aggregate[%d]: %w", i, err)
		}
		r := &Rule{Index: i, Config: c, exact: map[string]bool{}, by: c.By != nil, keys: map[string]bool{}}
		switch c.Gauge {
		case "max":
			r.Gauge = GaugeMax
		case "min":
			r.Gauge = GaugeMin
		}
		for _, m := range c.Metrics {
			if !strings.ContainsAny(m, "*?") {
				r.exact[m] = true
				continue
			}
			re, err := glob(m)
			if err != nil {
				return nil, fmt.Errorf("aggregate[%d]: metrics: %q: %w", i, m, err)
			}
			r.patterns = append(r.patterns, re)
		}
		for _, k := range slices.Concat(c.By, c.Without) {
			r.keys[k] = true
		}
		rs.rules = append(rs.rules, r)
	}
	return rs, nil
}

// Len is the number of rules.
func (rs *Rules) Len() int {
	if rs == nil {
		return 0
	}
	return len(rs.rules)
}

// All returns the rules in configuration order.
func (rs *Rules) All() []*Rule {
	if rs == nil {
		return nil
	}
	return rs.rules
}

// Match returns the first rule that takes the metric name, or nil.
func (rs *Rules) Match(name string) *Rule {
	if rs == nil || len(rs.rules) == 0 {
		return nil
	}
	rs.mu.RLock()
	i, ok := rs.cache[name]
	rs.mu.RUnlock()
	if !ok {
		i = -1
		for _, r := range rs.rules {
			if r.Matches(name) {
				i = r.Index
				break
			}
		}
		rs.mu.Lock()
		if len(rs.cache) < maxCachedNames {
			rs.cache[name] = i
		}
		rs.mu.Unlock()
	}
	if i < 0 {
		return nil
	}
	return rs.rules[i]
}
