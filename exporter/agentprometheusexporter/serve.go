package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"

import (
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
)

// Compressors are pooled: a fresh one per scrape would be most of its garbage.
var (
	gzipPool = sync.Pool{New: func() any {
		// BestSpeed: a gateway's exposition is large and highly redundant;
		// level 1 already shrinks it ~10x at a fraction of the default's CPU.
		w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
		return w
	}}
)

// serveMetrics writes the exposition in the format the scraper negotiated,
// with expfmt's negotiation (as promhttp does). Text 0.0.4 with legacy names
// takes the direct writer; every other format goes through expfmt.
func (e *agentPrometheusExporter) serveMetrics(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var format expfmt.Format
	if e.cfg.EnableOpenMetrics {
		format = expfmt.NegotiateIncludingOpenMetrics(r.Header)
	} else {
		format = expfmt.Negotiate(r.Header)
	}
	h := w.Header()
	h.Set("Content-Type", string(format))

	var out io.Writer = w
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
		gz := gzipPool.Get().(*gzip.Writer)
		gz.Reset(w)
		defer func() {
			_ = gz.Close()
			gz.Reset(nil)
			gzipPool.Put(gz)
		}()
		out = gz
	}

	var err error
	if format.FormatType() == expfmt.TypeTextPlain && !e.cfg.TranslationStrategy.utf8Allowed() {
		err = exposition.WriteText(out, e.store, e.expo)
	} else {
		err = exposition.WriteEncoded(out, format, e.store, e.expo, expfmt.WithCreatedLines())
	}
	if err != nil {
		// The status is sent already; the scraper sees a cut response.
		e.set.Logger.Debug("Scrape ended early", zap.Error(err))
	}
	e.telemetry.ExporterAgentprometheusScrapeDuration.Record(r.Context(), time.Since(start).Seconds(),
		metric.WithAttributeSet(attribute.NewSet(attribute.String("format", formatName(string(format))))))
}

func acceptsGzip(acceptEncoding string) bool {
	for part := range strings.SplitSeq(acceptEncoding, ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(enc) == "gzip" && !strings.Contains(strings.ReplaceAll(params, " ", ""), "q=0") {
			return true
		}
	}
	return false
}
