package grpcstatsprocessor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/dialect"
	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/internal/metadata"
)

// manifest is the record of the calls a fixture's generator made.
type manifest struct {
	Calls []struct {
		FullMethod       string `json:"full_method"`
		StatusCode       string `json:"status_code"`
		Count            uint64 `json:"count"`
		StaticMethod     bool   `json:"static_method"`
		ServerRegistered bool   `json:"server_registered"`
	} `json:"calls"`
}

func loadFixture(t *testing.T, name string) (pmetric.Metrics, manifest) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "fixtures", name+".json"))
	require.NoError(t, err)
	md, err := (&pmetric.JSONUnmarshaler{}).UnmarshalMetrics(raw)
	require.NoError(t, err)
	raw, err = os.ReadFile(filepath.Join("testdata", "fixtures", name+".manifest.json"))
	require.NoError(t, err)
	var m manifest
	require.NoError(t, json.Unmarshal(raw, &m))
	return md, m
}

func process(t *testing.T, cfg *Config, batches ...pmetric.Metrics) []pmetric.Metrics {
	t.Helper()
	sink := new(consumertest.MetricsSink)
	p, err := NewFactory().CreateMetrics(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	for _, md := range batches {
		require.NoError(t, p.ConsumeMetrics(context.Background(), md))
	}
	require.NoError(t, p.Shutdown(context.Background()))
	return sink.AllMetrics()
}

// shape says how a target names the canonical call-duration series.
type shape struct {
	server, client, method, status, other string
}

var shapes = map[dialect.Target]shape{
	dialect.TargetSemconv: {"rpc.server.call.duration", "rpc.client.call.duration", "rpc.method", "rpc.status_code", "_OTHER"},
	dialect.TargetGRPC:    {"grpc.server.call.duration", "grpc.client.call.duration", "grpc.method", "grpc.status", "other"},
}

// counts sums the histogram counts of one metric by method and status.
func counts(md pmetric.Metrics, name string, s shape, withStatus bool) (map[string]uint64, int) {
	out, metrics := map[string]uint64{}, 0
	eachMetric(md, func(_ pcommon.InstrumentationScope, m pmetric.Metric) {
		if m.Name() != name {
			return
		}
		metrics++
		dps := m.Histogram().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			dp := dps.At(i)
			if dp.Count() == 0 {
				continue // go-grpc-prometheus pre-creates series of methods never called
			}
			method, _ := dp.Attributes().Get(s.method)
			key := method.Str()
			if withStatus {
				status, _ := dp.Attributes().Get(s.status)
				key += " " + status.Str()
			}
			out[key] += dp.Count()
		}
	})
	return out, metrics
}

func eachMetric(md pmetric.Metrics, fn func(pcommon.InstrumentationScope, pmetric.Metric)) {
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				fn(sms.At(j).Scope(), ms.At(k))
			}
		}
	}
}

// expected turns the manifest into the counts a side should report.
func expected(m manifest, server, withStatus, nativeClient bool, s shape) map[string]uint64 {
	out := map[string]uint64{}
	for _, c := range m.Calls {
		if server && !c.ServerRegistered {
			continue // a call to an unregistered method records no server duration
		}
		method := strings.TrimPrefix(c.FullMethod, "/")
		if nativeClient && !c.StaticMethod && !c.ServerRegistered {
			method = s.other // grpc's plugin names methods it was not told about "other"
		}
		key := method
		if withStatus {
			key += " " + c.StatusCode
		}
		out[key] += c.Count
	}
	return out
}

func TestFixturesConvertExactlyOnce(t *testing.T) {
	fixtures := []struct {
		name string
		// serverStatus / clientStatus: the dialect's durations carry a status.
		serverStatus, client, clientStatus bool
		// nativeClient: the client side that wins comes from grpc's plugin.
		nativeClient bool
	}{
		{name: "otelgrpc_v0.64_legacy", serverStatus: true, client: true, clientStatus: true},
		{name: "otelgrpc_v0.65_unitbug", serverStatus: true, client: true, clientStatus: true},
		{name: "otelgrpc_v0.72", serverStatus: true, client: true, clientStatus: true},
		{name: "otelgrpc_v0.72_dup", serverStatus: true, client: true, clientStatus: true},
		{name: "grpc_native", serverStatus: true, client: true, clientStatus: true, nativeClient: true},
		{name: "otelgrpc_and_grpc_native", serverStatus: true, client: true, clientStatus: true},
		{name: "opencensus"},
		{name: "grpc_prometheus", client: true},
	}
	for _, target := range []dialect.Target{dialect.TargetSemconv, dialect.TargetGRPC} {
		s := shapes[target]
		for _, fx := range fixtures {
			t.Run(fmt.Sprintf("%s/%s", target, fx.name), func(t *testing.T) {
				md, m := loadFixture(t, fx.name)
				cfg := createDefaultConfig().(*Config)
				cfg.Target = target
				out := process(t, cfg, md)
				require.Len(t, out, 1)

				nativeClient := fx.nativeClient || (target == dialect.TargetGRPC && fx.name == "otelgrpc_and_grpc_native")
				got, n := counts(out[0], s.server, s, fx.serverStatus)
				assert.Equal(t, 1, n, "one server duration metric after deduplication")
				assert.Equal(t, expected(m, true, fx.serverStatus, false, s), got, "server calls per method and status")
				if fx.client {
					got, n = counts(out[0], s.client, s, fx.clientStatus)
					assert.Equal(t, 1, n, "one client duration metric after deduplication")
					assert.Equal(t, expected(m, false, fx.clientStatus, nativeClient, s), got, "client calls per method and status")
				}
				assertSeconds(t, out[0], s)
			})
		}
	}
}

// assertSeconds checks the converted durations are in seconds: the slow call
// (≥ 60 ms) lands between 50 ms and 5 s, and every bound is below an hour.
func assertSeconds(t *testing.T, md pmetric.Metrics, s shape) {
	t.Helper()
	eachMetric(md, func(_ pcommon.InstrumentationScope, m pmetric.Metric) {
		if m.Name() != s.server && m.Name() != s.client {
			return
		}
		assert.Equal(t, "s", m.Unit())
		dps := m.Histogram().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			dp := dps.At(i)
			method, _ := dp.Attributes().Get(s.method)
			if strings.HasSuffix(method.Str(), "/CacheableUnaryCall") && dp.Count() > 0 {
				assert.Greater(t, dp.Sum(), 0.05, "%s: slow call sum", m.Name())
				assert.Less(t, dp.Sum(), 5.0, "%s: slow call sum", m.Name())
			}
			for _, b := range dp.ExplicitBounds().AsRaw() {
				assert.Less(t, b, 3600.0, "%s: bound %v is not in seconds", m.Name(), b)
			}
		}
	})
}

// TestUnrelatedMetricsPassUntouched checks that every metric the processor
// does not convert leaves exactly as it came, in place.
func TestUnrelatedMetricsPassUntouched(t *testing.T) {
	converted := map[string]bool{
		"rpc.server.call.duration": true, "rpc.client.call.duration": true,
		"rpc.server.duration": true, "rpc.client.duration": true,
		"grpc.server.call.duration": true, "grpc.client.call.duration": true,
		"grpc.io/server/server_latency": true,
		"grpc_server_handling_seconds":  true, "grpc_client_handling_seconds": true,
	}
	for _, name := range []string{"otelgrpc_v0.64_legacy", "grpc_native", "opencensus", "grpc_prometheus"} {
		t.Run(name, func(t *testing.T) {
			in, _ := loadFixture(t, name)
			out := process(t, createDefaultConfig().(*Config), cloneMetrics(in))[0]
			want := map[string]string{}
			eachMetric(in, func(scope pcommon.InstrumentationScope, m pmetric.Metric) {
				if !converted[m.Name()] {
					want[scope.Name()+"|"+m.Name()] = metricJSON(t, m)
				}
			})
			got := map[string]string{}
			eachMetric(out, func(scope pcommon.InstrumentationScope, m pmetric.Metric) {
				if _, ok := want[scope.Name()+"|"+m.Name()]; ok {
					got[scope.Name()+"|"+m.Name()] = metricJSON(t, m)
				}
			})
			assert.Equal(t, want, got)
			assert.NotEmpty(t, want)
		})
	}
}

func cloneMetrics(md pmetric.Metrics) pmetric.Metrics {
	c := pmetric.NewMetrics()
	md.CopyTo(c)
	return c
}

func metricJSON(t *testing.T, m pmetric.Metric) string {
	md := pmetric.NewMetrics()
	m.CopyTo(md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics().AppendEmpty())
	b, err := (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
	require.NoError(t, err)
	return string(b)
}
