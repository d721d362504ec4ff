package convert // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/resourcetotelemetry"
)

// ResourceLabels selects the resource attributes that become labels on every
// series of their resource, with the meaning contrib's prometheusexporter
// gives resourcetotelemetry.Settings: included and excluded wildcard
// patterns (* and ?, no escapes), an exclusion winning, and an empty
// included with a non-empty excluded taking every other attribute; without
// patterns, enabled takes every attribute but the service ones when
// exclude_service_attributes is set.
type ResourceLabels struct {
	all                    bool
	excludeService         bool
	hasIncluded            bool
	includedExact          map[string]bool
	excludedExact          map[string]bool
	includedRe, excludedRe []*regexp.Regexp
	// exact lists the included names when they are all the selection
	// (no pattern, no exclusion): looked up one by one rather than matched
	// against every attribute of the resource.
	exact []string
}

// NewResourceLabels returns the selection of s, nil when it selects nothing.
// s must have passed its Validate.
func NewResourceLabels(s resourcetotelemetry.Settings) *ResourceLabels {
	if len(s.Included) == 0 && len(s.Excluded) == 0 {
		if !s.Enabled {
			return nil
		}
		return &ResourceLabels{all: true, excludeService: s.ExcludeServiceAttributes}
	}
	r := &ResourceLabels{hasIncluded: len(s.Included) > 0, includedExact: map[string]bool{}, excludedExact: map[string]bool{}}
	r.includedRe = addPatterns(r.includedExact, s.Included)
	r.excludedRe = addPatterns(r.excludedExact, s.Excluded)
	if len(r.includedRe) == 0 && len(s.Excluded) == 0 {
		r.exact = slices.Sorted(maps.Keys(r.includedExact))
	}
	return r
}

// addPatterns puts the plain names of patterns in exact and returns the
// wildcard ones compiled.
func addPatterns(exact map[string]bool, patterns []string) []*regexp.Regexp {
	var res []*regexp.Regexp
	for _, p := range patterns {
		if !strings.ContainsAny(p, "*?") {
			exact[p] = true
			continue
		}
		if re, err := Glob(p); err == nil {
			res = append(res, re)
		}
	}
	return res
}

// Glob compiles a wildcard pattern: * any run of characters, ? any one.
func Glob(pattern string) (*regexp.Regexp, error) {
	quoted := regexp.QuoteMeta(pattern)
	return regexp.Compile("(?s)^" + strings.NewReplacer(`\*`, `.*`, `\?`, `.`).Replace(quoted) + "$")
}

// Exact returns the attribute names selected when the selection is a plain
// list of names.
func (r *ResourceLabels) Exact() ([]string, bool) { return r.exact, r.exact != nil }

// Match reports whether the resource attribute key becomes a label.
func (r *ResourceLabels) Match(key string) bool {
	if r.all {
		return !r.excludeService || !isServiceAttribute(key)
	}
	if r.excludedExact[key] || matchAny(r.excludedRe, key) {
		return false
	}
	if !r.hasIncluded {
		return true // only exclusions: everything else
	}
	return r.includedExact[key] || matchAny(r.includedRe, key)
}

func matchAny(res []*regexp.Regexp, key string) bool {
	for _, re := range res {
		if re.MatchString(key) {
			return true
		}
	}
	return false
}
