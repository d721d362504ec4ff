package exposition // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"

// Format is an exposition format a scrape can be written in: one writer
// each.
type Format uint8

const (
	// Text is the text format 0.0.4.
	Text Format = iota
	// OpenMetrics is OpenMetrics 1.0 (0.0.1 is written alike).
	OpenMetrics
	// Protobuf is delimited protobuf, as Prometheus scrapes native
	// histograms.
	Protobuf
	// ProtobufText and ProtobufCompact are the protobuf text forms that
	// expfmt's negotiation offers (no Prometheus asks for them): the
	// delimited protobuf, re-encoded by expfmt.
	ProtobufText
	ProtobufCompact
	NumFormats
)

var formatNames = [NumFormats]string{"text", "openmetrics", "protobuf", "protobuf-text", "protobuf-compact"}

func (f Format) String() string { return formatNames[f] }
