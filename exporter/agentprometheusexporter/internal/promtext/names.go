package promtext // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"

import "unicode/utf8"

// Separator joins the values of labels whose names sanitise to the same
// name, in the order of their original names, as contrib's exporter joins
// them: one label instead of two that would not parse.
const Separator = ';'

// ExportedNameLabel is what a label that would be named __name__ is called
// instead: a series with two metric names does not parse. Prometheus renames
// clashing labels alike.
const ExportedNameLabel = "exported___name__"

// IsLegacyLabelName reports whether name is a label name of the legacy
// character set, [a-zA-Z_][a-zA-Z0-9_]*, which every format and escaping
// scheme writes as it is.
func IsLegacyLabelName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !IsLegacyLabelByte(name[i], i == 0) {
			return false
		}
	}
	return true
}

// IsLegacyLabelByte reports whether c may stand in a legacy label name,
// first or further on.
func IsLegacyLabelByte(c byte, first bool) bool {
	return legacyLabelByte[c] == 2 || legacyLabelByte[c] == 1 && !first
}

// legacyLabelByte is 2 for the bytes a legacy label name may start with, 1
// for the digits, which may only follow.
var legacyLabelByte = func() (t [256]uint8) {
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = 2, 2
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = 1
	}
	t['_'] = 2
	return t
}()

// UnderscoreLabelName escapes a label name that is not a legacy one for a
// scraper that does not take UTF-8 names: each character that may not stand
// where it is becomes '_'. Names that escape alike ("a.b", "a-b") are one
// label of a series, their values joined with Separator; the exposition
// writes them so, and the store keeps apart the series they would make alike.
func UnderscoreLabelName(raw string) string {
	escaped := make([]byte, 0, len(raw))
	for i, r := range raw {
		if r < utf8.RuneSelf && IsLegacyLabelByte(byte(r), i == 0) {
			escaped = append(escaped, byte(r))
		} else {
			escaped = append(escaped, '_')
		}
	}
	if s := string(escaped); s != "__name__" {
		return s
	}
	return ExportedNameLabel
}
