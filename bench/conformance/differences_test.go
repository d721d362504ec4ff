package conformance

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
)

// difference is one deliberate difference from contrib's exporter, as the
// exporter's README states it. A case lists the differences its input
// shows. In each format a difference shows in, the harness has it check that
// the two scrapes differ as stated and take the difference out of them, so
// that the rest is compared: a difference that does not show fails the
// case, so that a change in either exporter shows.
type difference struct {
	// readme is how the exporter's README names the input, as written in
	// the input column of one of its tables (TestDifferencesAreInTheREADME).
	readme string
	// formats lists the formats the difference shows in; nil: all.
	formats []scrapeFormat
	// apply checks the difference and removes it from both scrapes; it
	// returns what it expected and did not find.
	apply func(contrib, ours *exposition) error
}

func (d difference) shownIn(f scrapeFormat) bool {
	return d.formats == nil || slices.ContainsFunc(d.formats, func(g scrapeFormat) bool { return g.name == f.name })
}

// differences lists the differences of a case.
func differences(ds ...difference) []difference { return ds }

// emptyLabelsLeftOut: contrib writes labels whose value is empty (every
// series it serves has otel_scope_schema_url, most of them empty); ours
// leaves them out. Prometheus treats an empty label as absent, so the
// series it stores are the same; the difference takes contrib's out.
var emptyLabelsLeftOut = difference{
	readme: "labels with empty values (e.g. `otel_scope_schema_url=\"\"`)",
	apply: func(contrib, ours *exposition) error {
		for _, s := range ours.samples {
			for _, l := range s.labels {
				if l.value == "" {
					return fmt.Errorf("ours writes %s=\"\" on %s", l.name, s.name)
				}
			}
		}
		n := 0
		for i, s := range contrib.samples {
			labels := slices.DeleteFunc(slices.Clone(s.labels), func(l label) bool { return l.value == "" })
			n += len(s.labels) - len(labels)
			contrib.samples[i].labels = labels
		}
		if n == 0 {
			return errors.New("contrib writes no label with an empty value")
		}
		return nil
	},
}

// createdSamples: with enable_open_metrics_created_samples (a setting of
// ours only), ours writes a _created sample for each counter, histogram and
// summary series with a start time; contrib writes none.
var createdSamples = difference{
	readme:  "OpenMetrics with `enable_open_metrics_created_samples`",
	formats: []scrapeFormat{formatOpenMetrics},
	apply: func(contrib, ours *exposition) error {
		isCreated := func(s sample) bool { return s.name == s.family+"_created" }
		if slices.ContainsFunc(contrib.samples, isCreated) {
			return errors.New("contrib writes _created samples")
		}
		n := 0
		for _, s := range ours.samples {
			if isCreated(s) {
				if s.typ != "counter" && s.typ != "histogram" && s.typ != "summary" {
					return fmt.Errorf("ours writes %s for a %s", s.name, s.typ)
				}
				n++
			}
		}
		if n == 0 {
			return errors.New("ours writes no _created sample")
		}
		ours.filter(func(s sample) bool { return !isCreated(s) })
		return nil
	},
}

// selector picks the samples a difference concerns.
type selector struct {
	what  string
	match func(sample) bool
}

// familyIs selects every sample of the families named (one name as each
// format writes it).
func familyIs(families ...string) selector {
	return selector{strings.Join(families, " or "), func(s sample) bool { return slices.Contains(families, s.family) }}
}

// typedFamilyIs selects the samples of family if it has the type typ.
func typedFamilyIs(family, typ string) selector {
	return selector{family + " (" + typ + ")", func(s sample) bool { return s.family == family && s.typ == typ }}
}

// labelIs selects the samples of family with the label name=value.
func labelIs(family, name, value string) selector {
	return selector{fmt.Sprintf("%s{%s=%q}", family, name, value), func(s sample) bool {
		v, ok := s.labelValue(name)
		return s.family == family && ok && v == value
	}}
}

// valueIs selects the samples of family whose value is v.
func valueIs(family string, v float64) selector {
	return selector{fmt.Sprintf("%s %s", family, formatFloat(v)), func(s sample) bool {
		return s.family == family && s.value == v
	}}
}

// onlyOurs is a difference where ours serves what contrib drops: for each
// selector, ours must serve at least one sample and contrib none; ours'
// are then taken out.
func onlyOurs(readme string, sels ...selector) difference {
	return difference{readme: readme, apply: func(contrib, ours *exposition) error {
		return servedByOneSide(sels, ours, contrib, "ours", "contrib")
	}}
}

// onlyContrib is a difference where contrib serves what ours drops: for
// each selector, contrib must serve at least one sample and ours none;
// contrib's are then taken out.
func onlyContrib(readme string, sels ...selector) difference {
	return difference{readme: readme, apply: func(contrib, ours *exposition) error {
		return servedByOneSide(sels, contrib, ours, "contrib", "ours")
	}}
}

func servedByOneSide(sels []selector, serves, drops *exposition, servesName, dropsName string) error {
	for _, sel := range sels {
		if i := slices.IndexFunc(drops.samples, sel.match); i >= 0 {
			return fmt.Errorf("%s serves %s: %s", dropsName, sel.what, drops.samples[i].key(false))
		}
		if !slices.ContainsFunc(serves.samples, sel.match) {
			return fmt.Errorf("%s does not serve %s", servesName, sel.what)
		}
		serves.filter(func(s sample) bool { return !sel.match(s) })
	}
	return nil
}

// servedDifferently is a difference where both serve family, each as
// stated: the samples of family, rendered by short, must be exactly
// contribWants and oursWants, in any order.
func servedDifferently(readme, family string, contribWants, oursWants []string) difference {
	return difference{
		readme: readme,
		apply: func(contrib, ours *exposition) error {
			for _, side := range []struct {
				name  string
				e     *exposition
				wants []string
			}{{"contrib", contrib, contribWants}, {"ours", ours, oursWants}} {
				var got []string
				for _, s := range side.e.samples {
					if s.family == family {
						got = append(got, short(s))
					}
				}
				if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(side.wants))) {
					return fmt.Errorf("%s serves %s as\n\t%s\nnot as\n\t%s", side.name, family,
						strings.Join(got, "\n\t"), strings.Join(side.wants, "\n\t"))
				}
				side.e.filter(func(s sample) bool { return s.family != family })
			}
			return nil
		},
	}
}

// short renders a sample as `name{labels} value`, without the labels every
// series of a case has (job, instance and the scope's), its labels sorted.
func short(s sample) string {
	var ls []string
	for _, l := range s.labels {
		if l.name == "job" || l.name == "instance" || strings.HasPrefix(l.name, "otel_scope_") {
			continue
		}
		ls = append(ls, l.name+"="+l.value)
	}
	return s.name + "{" + strings.Join(ls, ",") + "} " + formatFloat(s.value)
}

// helpDiffers is a difference in the HELP of family: contrib's must be
// contribHelp, ours' oursHelp; ours' is then taken as contrib's.
func helpDiffers(readme, family, contribHelp, oursHelp string) difference {
	return difference{
		readme: readme,
		apply: func(contrib, ours *exposition) error {
			if h := contrib.help[family]; h != contribHelp {
				return fmt.Errorf("contrib's HELP of %s is %q", family, h)
			}
			if h := ours.help[family]; h != oursHelp {
				return fmt.Errorf("ours' HELP of %s is %q", family, h)
			}
			ours.help[family] = contribHelp
			return nil
		},
	}
}

// targetInfoTimestamp: with sample timestamps, ours' target_info carries the
// time of its resource's latest batch, so that it goes stale in Prometheus
// with the resource's other series; contrib's has none.
var targetInfoTimestamp = difference{
	readme: "`target_info` with sample timestamps",
	apply: func(contrib, ours *exposition) error {
		for _, s := range contrib.samples {
			if s.family == "target_info" && s.ts != "" {
				return fmt.Errorf("contrib's target_info has the timestamp %s", s.ts)
			}
		}
		n := 0
		for i, s := range ours.samples {
			if s.family == "target_info" {
				if s.ts == "" {
					return errors.New("ours' target_info has no timestamp")
				}
				ours.samples[i].ts = ""
				n++
			}
		}
		if n == 0 {
			return errors.New("ours serves no target_info")
		}
		return nil
	},
}

// The README's names of the differences several cases show.
const (
	reservedLabel   = "an attribute name starting with `__`"
	collidingLabels = "two attribute names that sanitise to the same label (`a.b`, `a_b`)"
)

// utf8NamesEscapedInProtobuf: Prometheus 3 asks for protobuf without an
// escaping parameter, and contrib (promhttp) answers with every name
// escaped with underscores, unlike its text and OpenMetrics scrapes; ours
// takes the escaping the scraper names for its text formats and serves the
// names as sent. The difference escapes ours' names as contrib does.
var utf8NamesEscapedInProtobuf = difference{
	readme:  "UTF-8 names (`NoUTF8EscapingWithSuffixes`, `NoTranslation`) in a protobuf scrape by Prometheus 3 (`scrape_native_histograms`)",
	formats: []scrapeFormat{formatProtobufUTF8},
	apply: func(contrib, ours *exposition) error {
		if !strings.HasSuffix(contrib.contentType, ";escaping="+model.EscapeUnderscores) {
			return fmt.Errorf("contrib answers %s", contrib.contentType)
		}
		if !strings.HasSuffix(ours.contentType, ";escaping="+model.AllowUTF8) {
			return fmt.Errorf("ours answers %s", ours.contentType)
		}
		if !slices.ContainsFunc(ours.samples, hasUTF8Name) {
			return errors.New("ours serves no UTF-8 name")
		}
		if i := slices.IndexFunc(contrib.samples, hasUTF8Name); i >= 0 {
			return fmt.Errorf("contrib serves the UTF-8 name in %s", contrib.samples[i].key(false))
		}
		escape := func(name string) string { return model.EscapeName(name, model.UnderscoreEscaping) }
		for i, s := range ours.samples {
			s.family, s.name = escape(s.family), escape(s.name)
			labels := make([]label, len(s.labels))
			for j, l := range s.labels {
				labels[j] = label{escape(l.name), l.value}
			}
			s.labels = sortLabels(labels)
			ours.samples[i] = s
		}
		for _, m := range []map[string]string{ours.help, ours.units} {
			for name, v := range maps.Clone(m) {
				delete(m, name)
				m[escape(name)] = v
			}
		}
		ours.contentType = contrib.contentType
		return nil
	},
}

// hasUTF8Name reports whether a sample's name or one of its label names is
// not a legacy one.
func hasUTF8Name(s sample) bool {
	return !model.LegacyValidation.IsValidMetricName(s.name) ||
		slices.ContainsFunc(s.labels, func(l label) bool { return !model.LegacyValidation.IsValidLabelName(l.name) })
}
