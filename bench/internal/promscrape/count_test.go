package promscrape

import (
	"bytes"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// families is a small exposition: target_info, a gauge with a UTF-8 name,
// a counter with a start time and a histogram whose buckets leave +Inf
// implicit. Its text format has 1 + 2 + 1 + (3+1+2) = 10 sample lines, 9
// apart from target_info.
func families() []*dto.MetricFamily {
	label := func(n, v string) *dto.LabelPair { return &dto.LabelPair{Name: proto.String(n), Value: proto.String(v)} }
	start := timestamppb.New(time.Unix(1_700_000_000, 0))
	return []*dto.MetricFamily{
		{
			Name: proto.String("target_info"), Help: proto.String("Target metadata"), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Label: []*dto.LabelPair{label("job", "a/b")}, Gauge: &dto.Gauge{Value: proto.Float64(1)}}},
		},
		{
			Name: proto.String("queue.depth"), Help: proto.String("Items."), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{
				{Label: []*dto.LabelPair{label("route", "/a")}, Gauge: &dto.Gauge{Value: proto.Float64(0.5)}},
				{Label: []*dto.LabelPair{label("route", "/b")}, Gauge: &dto.Gauge{Value: proto.Float64(1.5)}},
			},
		},
		{
			Name: proto.String("requests_total"), Help: proto.String("Requests."), Type: dto.MetricType_COUNTER.Enum(),
			Metric: []*dto.Metric{{Counter: &dto.Counter{Value: proto.Float64(7), CreatedTimestamp: start}}},
		},
		{
			Name: proto.String("latency_seconds"), Help: proto.String("Latency."), Type: dto.MetricType_HISTOGRAM.Enum(),
			Metric: []*dto.Metric{{Histogram: &dto.Histogram{
				SampleCount: proto.Uint64(6), SampleSum: proto.Float64(3.5), CreatedTimestamp: start,
				Bucket: []*dto.Bucket{
					{UpperBound: proto.Float64(0.1), CumulativeCount: proto.Uint64(1)},
					{UpperBound: proto.Float64(1), CumulativeCount: proto.Uint64(3)},
					{UpperBound: proto.Float64(5), CumulativeCount: proto.Uint64(5)},
				},
			}}},
		},
	}
}

func encode(t *testing.T, f expfmt.Format, opts ...expfmt.EncoderOption) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, f, opts...)
	for _, mf := range families() {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func bodies(t *testing.T) map[string]struct {
	body        []byte
	contentType string
} {
	utf8 := expfmt.NewFormat(expfmt.TypeTextPlain).WithEscapingScheme(model.NoEscaping)
	om := expfmt.NewFormat(expfmt.TypeOpenMetrics).WithEscapingScheme(model.NoEscaping)
	proto := expfmt.NewFormat(expfmt.TypeProtoDelim).WithEscapingScheme(model.NoEscaping)
	legacy := expfmt.NewFormat(expfmt.TypeTextPlain).WithEscapingScheme(model.UnderscoreEscaping)
	return map[string]struct {
		body        []byte
		contentType string
	}{
		"text 0.0.4":        {encode(t, legacy), string(legacy)},
		"text allow-utf-8":  {encode(t, utf8), string(utf8)},
		"openmetrics":       {encode(t, om, expfmt.WithCreatedLines()), string(om)},
		"protobuf":          {encode(t, proto), string(proto)},
		"openmetrics plain": {encode(t, om), string(om)},
	}
}

func TestCountEveryFormat(t *testing.T) {
	for name, b := range bodies(t) {
		t.Run(name, func(t *testing.T) {
			c, err := Count(b.body, b.contentType)
			if err != nil {
				t.Fatalf("%v\n%s", err, b.body)
			}
			want := Counts{Samples: 9, TargetInfo: 1, Families: 4}
			if c != want {
				t.Fatalf("counts %+v, want %+v\n%s", c, want, b.body)
			}
		})
	}
}

func TestCountSeesCutBodies(t *testing.T) {
	for name, b := range bodies(t) {
		t.Run(name, func(t *testing.T) {
			full, err := Count(b.body, b.contentType)
			if err != nil {
				t.Fatal(err)
			}
			// A body cut short either fails to parse or holds fewer samples
			// (a cut between two lines, or two protobuf messages, leaves a
			// valid exposition), unless all that is cut is the newline
			// after OpenMetrics' "# EOF".
			for cut := 0; cut < len(b.body); cut++ {
				body := b.body[:cut]
				c, err := Count(body, b.contentType)
				if err != nil || c.Samples+c.TargetInfo < full.Samples+full.TargetInfo {
					continue
				}
				if bytes.HasSuffix(body, []byte("# EOF")) && cut == len(b.body)-1 {
					continue
				}
				t.Fatalf("cut at %d of %d bytes seen as whole (%+v):\n%s", cut, len(b.body), c, body)
			}
		})
	}
}

func TestCountRejectsUnknownContentTypes(t *testing.T) {
	for _, ct := range []string{"", "application/json", "text/html; charset=utf-8"} {
		if _, err := Count([]byte("a 1\n"), ct); err == nil {
			t.Errorf("Content-Type %q accepted", ct)
		}
	}
}

func TestIsTargetInfo(t *testing.T) {
	for s, want := range map[string]bool{
		`target_info{job="a"}`:       true,
		`target_info 1`:              true,
		`target_info`:                true,
		"target_info\xffjob\xffa":    true,
		`{"target_info",job="a"}`:    true,
		`{"target_info"}`:            true,
		`target_info_total{job="a"}`: false,
		`{"target_info_x"}`:          false,
		`my_target_info{job="a"}`:    false,
		"target_infox\xffjob\xffa":   false,
	} {
		if got := isTargetInfo([]byte(s)); got != want {
			t.Errorf("isTargetInfo(%q) = %v", s, got)
		}
	}
}
