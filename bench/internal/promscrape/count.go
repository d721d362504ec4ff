package promscrape

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

// Counts is what a response holds, as Prometheus reads it.
type Counts struct {
	// Samples are the float samples apart from target_info's: in the text
	// formats one per sample line, in protobuf one per line the text format
	// would have (a classic histogram gives its buckets, +Inf included, its
	// _sum and its _count). OpenMetrics _created samples are not counted:
	// they are start times, which the text format does not carry.
	Samples int64
	// TargetInfo are the samples of target_info.
	TargetInfo int64
	// NativeHistograms are native histogram samples (none in the text formats).
	NativeHistograms int64
	// Families are the families with a declared type.
	Families int64
}

// Count parses a whole response body, decompressed, with the parser
// Prometheus picks for its Content-Type (model/textparse), and counts what
// it holds. A body that does not parse to its end is an error: a cut text
// body must also end with a newline, an OpenMetrics one with "# EOF", and a
// protobuf one must not end inside a message.
func Count(body []byte, contentType string) (Counts, error) {
	var c Counts
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return c, fmt.Errorf("Content-Type %q: %w", contentType, err)
	}
	if mediaType == "text/plain" && (len(body) == 0 || body[len(body)-1] != '\n') {
		return c, errors.New("the body does not end with a newline")
	}
	p, err := textparse.New(body, contentType, labels.NewSymbolTable(), textparse.ParserOptions{
		// As Prometheus with created-timestamp-zero-ingestion: _created is
		// the start time of its series, not a sample of its own.
		OpenMetricsSkipSTSeries: true,
	})
	if err != nil {
		return c, err
	}
	for {
		entry, err := p.Next()
		if errors.Is(err, io.EOF) {
			return c, nil
		}
		if err != nil {
			return c, fmt.Errorf("after %d samples: %w", c.Samples+c.TargetInfo, err)
		}
		switch entry {
		case textparse.EntrySeries:
			series, _, _ := p.Series()
			if isTargetInfo(series) {
				c.TargetInfo++
			} else {
				c.Samples++
			}
		case textparse.EntryHistogram:
			c.NativeHistograms++
		case textparse.EntryType:
			c.Families++
		}
	}
}

var targetInfo = []byte("target_info")

// isTargetInfo reports whether a parser's series bytes are of target_info:
// text `target_info{...}` or `target_info 1`, with UTF-8 names
// `{"target_info",...}`, from protobuf the name and a separator byte.
func isTargetInfo(series []byte) bool {
	if rest, ok := bytes.CutPrefix(series, []byte(`{"`)); ok {
		rest, ok = bytes.CutPrefix(rest, targetInfo)
		return ok && len(rest) > 0 && rest[0] == '"'
	}
	rest, ok := bytes.CutPrefix(series, targetInfo)
	return ok && (len(rest) == 0 || rest[0] == '{' || rest[0] == ' ' || rest[0] == 0xff)
}
