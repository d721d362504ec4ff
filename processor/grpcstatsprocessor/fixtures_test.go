package grpcstatsprocessor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
		Protocol         string `json:"protocol"`
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
			key += " " + spelt(c.StatusCode, c.Protocol, s)
		}
		out[key] += c.Count
	}
	return out
}

// spelt is the status a target writes for a call the manifest names (as
// gRPC spells codes) over a protocol: the semconv target spells Connect's
// code 1 as Connect does.
func spelt(status, protocol string, s shape) string {
	if protocol == "connect" && status == "CANCELLED" && s.status == shapes[dialect.TargetSemconv].status {
		return "CANCELED"
	}
	return status
}

func TestFixturesConvertExactlyOnce(t *testing.T) {
	fixtures := []struct {
		name string
		// serverStatus / clientStatus: the dialect's durations carry a status.
		serverStatus, client, clientStatus bool
		// nativeClient: the client side that wins comes from grpc's plugin.
		nativeClient bool
		// sdkBounds: the durations are in seconds but keep the SDK's
		// default bounds, made for milliseconds (otelgrpc v0.66.0).
		sdkBounds bool
	}{
		{name: "otelgrpc_v0.64_legacy", serverStatus: true, client: true, clientStatus: true},
		{name: "otelgrpc_v0.65_unitbug", serverStatus: true, client: true, clientStatus: true},
		{name: "otelgrpc_v0.72", serverStatus: true, client: true, clientStatus: true},
		{name: "otelgrpc_v0.72_dup", serverStatus: true, client: true, clientStatus: true},
		{name: "otelgrpc_v0.66", serverStatus: true, client: true, clientStatus: true, sdkBounds: true},
		{name: "otelgrpc_v0.72_old", serverStatus: true, client: true, clientStatus: true},
		{name: "otelconnect_v0.9", serverStatus: true, client: true, clientStatus: true},
		{name: "otelconnect_v0.12", serverStatus: true, client: true, clientStatus: true},
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
				assertSeconds(t, out[0], s, fx.sdkBounds)
			})
		}
	}
}

// assertSeconds checks the converted durations are in seconds: the slow call
// (≥ 60 ms, status OK; the otelconnect fixtures also cut it short at 20 ms)
// lands between 50 ms and 5 s, and every bound is below an hour.
//
// With sdkBounds the bounds must instead be exactly the SDK's default ones,
// as the library declared them: 0 to 10000, here seconds.
func assertSeconds(t *testing.T, md pmetric.Metrics, s shape, sdkBounds bool) {
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
			status, _ := dp.Attributes().Get(s.status)
			if strings.HasSuffix(method.Str(), "/CacheableUnaryCall") && dp.Count() > 0 && status.Str() == "OK" {
				assert.Greater(t, dp.Sum(), 0.05, "%s: slow call sum", m.Name())
				assert.Less(t, dp.Sum(), 5.0, "%s: slow call sum", m.Name())
			}
			if sdkBounds {
				assert.Equal(t, sdkDefaultBounds, dp.ExplicitBounds().AsRaw(), m.Name())
				continue
			}
			for _, b := range dp.ExplicitBounds().AsRaw() {
				assert.Less(t, b, 3600.0, "%s: bound %v is not in seconds", m.Name(), b)
			}
		}
	})
}

// sdkDefaultBounds are the OpenTelemetry SDK's default histogram bounds.
var sdkDefaultBounds = []float64{0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000}

// TestV066BoundsOntoCommon pins what histogram_bounds: common makes of
// otelgrpc v0.66.0's durations: seconds with the SDK's millisecond-shaped
// default bounds, so only 5 and 10 are common bounds. Re-bucketing is
// lossless (every count is kept) but no finer: the calls under 5 s were
// never told apart by the library.
func TestV066BoundsOntoCommon(t *testing.T) {
	md, m := loadFixture(t, "otelgrpc_v0.66")
	cfg := createDefaultConfig().(*Config)
	cfg.HistogramBounds = BoundsCommon
	out := process(t, cfg, md)[0]
	s := shapes[dialect.TargetSemconv]
	got, _ := counts(out, s.server, s, true)
	assert.Equal(t, expected(m, true, true, false, s), got, "every call kept")
	eachMetric(out, func(_ pcommon.InstrumentationScope, m pmetric.Metric) {
		if m.Name() != s.server && m.Name() != s.client {
			return
		}
		dps := m.Histogram().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			dp := dps.At(i)
			assert.Equal(t, []float64{5, 10}, dp.ExplicitBounds().AsRaw(), m.Name())
			assert.Equal(t, []uint64{dp.Count(), 0, 0}, dp.BucketCounts().AsRaw(), "%s: every call is under 5 s", m.Name())
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

// serverErrors are the status codes the semantic conventions count as
// server failures, for gRPC and Connect alike.
var serverErrors = map[string]bool{
	"UNKNOWN": true, "DEADLINE_EXCEEDED": true, "UNIMPLEMENTED": true,
	"INTERNAL": true, "UNAVAILABLE": true, "DATA_LOSS": true,
}

// TestFixturesCanonicalAttributes checks every converted point of every
// fixture against the stable conventions: the status under rpc.status_code
// only, rpc.system.name as the library reported the protocol, error.type on
// exactly the failed calls, code 1 spelt as each system spells it.
func TestFixturesCanonicalAttributes(t *testing.T) {
	fixtures := map[string][]string{ // the systems each fixture's points carry
		"otelgrpc_v0.64_legacy": {"grpc"}, "otelgrpc_v0.65_unitbug": {"grpc"}, "otelgrpc_v0.66": {"grpc"},
		"otelgrpc_v0.72": {"grpc"}, "otelgrpc_v0.72_dup": {"grpc"}, "otelgrpc_v0.72_old": {"grpc"},
		"grpc_native": {"grpc"}, "otelgrpc_and_grpc_native": {"grpc"}, "opencensus": {"grpc"}, "grpc_prometheus": {"grpc"},
		"otelconnect_v0.9": {"connectrpc", "grpc"}, "otelconnect_v0.12": {"connectrpc", "grpc"},
	}
	for name, systems := range fixtures {
		t.Run(name, func(t *testing.T) {
			md, _ := loadFixture(t, name)
			out := process(t, createDefaultConfig().(*Config), md)[0]
			seen := map[string]bool{}
			eachMetric(out, func(_ pcommon.InstrumentationScope, m pmetric.Metric) {
				client := m.Name() == "rpc.client.call.duration"
				if !client && m.Name() != "rpc.server.call.duration" {
					return
				}
				dps := m.Histogram().DataPoints()
				for i := 0; i < dps.Len(); i++ {
					attrs := dps.At(i).Attributes()
					for _, old := range []string{"rpc.response.status_code", "rpc.system", "rpc.service", "rpc.grpc.status_code", "rpc.connect_rpc.error_code"} {
						_, ok := attrs.Get(old)
						assert.False(t, ok, "%s: %s left in %v", m.Name(), old, attrs.AsRaw())
					}
					system, _ := attrs.Get("rpc.system.name")
					seen[system.Str()] = true
					status, hasStatus := attrs.Get("rpc.status_code")
					errorType, hasErrorType := attrs.Get("error.type")
					if !hasStatus {
						assert.False(t, hasErrorType, "%v", attrs.AsRaw())
						continue
					}
					failed := status.Str() != "OK" && (client || serverErrors[status.Str()])
					assert.Equal(t, failed, hasErrorType, "%s: error.type on %v", m.Name(), attrs.AsRaw())
					if hasErrorType {
						assert.Equal(t, status.Str(), errorType.Str())
					}
					switch status.Str() {
					case "CANCELED":
						assert.Equal(t, "connectrpc", system.Str(), "Connect's spelling")
					case "CANCELLED":
						assert.Equal(t, "grpc", system.Str(), "gRPC's spelling")
					}
				}
			})
			var got []string
			for s := range seen {
				got = append(got, s)
			}
			slices.Sort(got)
			assert.Equal(t, systems, got)
		})
	}
}
