package promtext // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"

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
