package agentprometheusexporter

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/cardinality"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
	"github.com/statsgate/statsgate/internal/testnet"
)

// BenchmarkCardinality serves the cardinality view of 1M series (1000
// agents × 1000, the gateway workload) over loopback HTTP, with the
// default settings: top 20, the label count of the largest family (100k
// series) or of one agent, bounded by scan_timeout 100ms. ns/op is per
// page; scanned-series is how many label sets the count read.
//
// IngestPause updates single points while pages are served back to back,
// as BenchmarkIngestPauseDuringScrape does during a scrape: the slowest
// update is how long ingestion waited on the view.
func BenchmarkCardinality(b *testing.B) {
	exp := benchExporter(b)
	exp.cfg.Cardinality.Enabled = true
	exp.cardinality = newCardinalityView(exp.cfg, exp.store, exp.descs, exp.agg, exp.clock.now)
	exp.cfg.Server.NetAddr.Endpoint = testnet.FreeEndpoint(b)
	if err := exp.start(context.Background(), componenttest.NewNopHost()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = exp.shutdown(context.Background()) })
	for a := range 1000 {
		_ = exp.consumeMetrics(context.Background(), storetest.AgentBatch(a, 100))
	}
	url := "http://" + exp.cfg.Server.NetAddr.Endpoint + exp.cfg.Cardinality.Path

	for _, page := range []struct{ name, query string }{
		{"html", "?format=html"},
		{"json", "?format=json"},
		// One agent's 1000 series, found among the 1M by a scan of every
		// family that holds some of them.
		{"json-resource", "?format=json&job=ns/svc&instance=agent-500"},
	} {
		b.Run("page="+page.name, func(b *testing.B) {
			var scanned int64
			for range b.N {
				body := getPage(b, url+page.query)
				if page.name != "html" {
					var r cardinality.Report
					if err := json.Unmarshal(body, &r); err != nil || r.Selection == nil {
						b.Fatal("no report:", err)
					}
					scanned = r.Selection.Scan.Series
				}
			}
			if page.name != "html" {
				b.ReportMetric(float64(scanned), "scanned-series")
			}
		})
	}

	b.Run("IngestPause", func(b *testing.B) {
		measureIngestPause(b, exp, func() { getPage(b, url) })
	})
}

// getPage fetches a page; it may run on a goroutine of its own, so it
// reports a failure with Error.
func getPage(b *testing.B, url string) []byte {
	resp, err := http.Get(url)
	if err != nil {
		b.Error(err)
		return nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		b.Error("cardinality view:", resp.Status, err)
	}
	return body
}
