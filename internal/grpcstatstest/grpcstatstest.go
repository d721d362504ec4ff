// Package grpcstatstest builds the OTLP batches of gRPC stats handlers that
// the grpcstats processor is tested and benchmarked with, both by its own
// tests and by bench/processorbench (a module of its own, which can import
// this package but not the processor's internal ones), so that both measure
// the same batches.
package grpcstatstest // import "github.com/statsgate/statsgate/internal/grpcstatstest"

import (
	"fmt"
	"strconv"

	"go.opentelemetry.io/collector/pdata/pmetric"
)

// OtelgrpcScope is the instrumentation scope of otelgrpc.
const OtelgrpcScope = "go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"

// LegacyBounds are otelgrpc ≤ v0.64's default bounds, in milliseconds.
var LegacyBounds = []float64{0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000}

// LegacyServer returns a batch of one resource (service.name "cart") whose
// otelgrpc v0.64.0 scope holds one rpc.server.duration histogram (unit ms,
// cumulative) without points, and that histogram's points to fill.
func LegacyServer() (pmetric.Metrics, pmetric.HistogramDataPointSlice) {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "cart")
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName(OtelgrpcScope)
	sm.Scope().SetVersion("0.64.0")
	m := sm.Metrics().AppendEmpty()
	m.SetName("rpc.server.duration")
	m.SetUnit("ms")
	h := m.SetEmptyHistogram()
	h.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	return md, h.DataPoints()
}

// Methods is the number of methods of shop.Cart the legacy batches cycle
// through: Method0 ... Method19.
const Methods = 20

// StatusCodes are the status codes the legacy batches cycle through.
var StatusCodes = []int64{0, 1, 2, 3, 5}

// LegacyBatch is LegacyServer with n points: shop.Cart's Methods methods ×
// the StatusCodes × a tenant per 100 points, each with otelgrpc v0.64's
// attributes (rpc.system, rpc.service, the short rpc.method, an int
// rpc.grpc.status_code) and one of its own (tenant), count 3, sum 12 ms
// and empty LegacyBounds buckets. With strCode the status code is a
// decimal string instead of an int.
func LegacyBatch(n int, strCode bool) pmetric.Metrics {
	md, dps := LegacyServer()
	dps.EnsureCapacity(n)
	for i := range n {
		dp := dps.AppendEmpty()
		code := StatusCodes[i%len(StatusCodes)]
		if strCode {
			dp.Attributes().PutStr("rpc.grpc.status_code", strconv.FormatInt(code, 10))
		} else {
			dp.Attributes().PutInt("rpc.grpc.status_code", code)
		}
		dp.Attributes().PutStr("rpc.method", fmt.Sprint("Method", i%Methods))
		dp.Attributes().PutStr("rpc.service", "shop.Cart")
		dp.Attributes().PutStr("rpc.system", "grpc")
		dp.Attributes().PutStr("tenant", fmt.Sprint("t", i/100))
		dp.SetCount(3)
		dp.SetSum(12)
		dp.ExplicitBounds().FromRaw(LegacyBounds)
		dp.BucketCounts().FromRaw(make([]uint64, len(LegacyBounds)+1))
	}
	return md
}

// UnrelatedBatch is n metrics of one gauge point each, under 50 names that
// no dialect knows.
func UnrelatedBatch(n int) pmetric.Metrics {
	md := pmetric.NewMetrics()
	ms := md.ResourceMetrics().AppendEmpty().ScopeMetrics().AppendEmpty().Metrics()
	ms.EnsureCapacity(n)
	for i := range n {
		m := ms.AppendEmpty()
		m.SetName(fmt.Sprint("http.server.request.duration.", i%50))
		m.SetEmptyGauge().DataPoints().AppendEmpty().SetIntValue(1)
	}
	return md
}
