// Package promtest talks to a real Prometheus server in system tests: start
// it on a config, and read what it stored through its HTTP API.
package promtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// API queries a Prometheus server's HTTP API.
type API struct {
	Base   string // http://host:port
	Client *http.Client
}

// New returns the API of the server listening on addr.
func New(addr string) API {
	return API{Base: "http://" + addr, Client: &http.Client{Timeout: 10 * time.Second}}
}

// Sample is one element of an instant vector: a float value or, for a native
// histogram, a histogram.
type Sample struct {
	Metric    map[string]string `json:"metric"`
	Value     []any             `json:"value"`
	Histogram []any             `json:"histogram"`
}

// Float is the sample's float value.
func (s Sample) Float() (float64, error) {
	if len(s.Value) != 2 {
		return 0, fmt.Errorf("%v has no float value (histogram: %v)", s.Metric, s.Histogram != nil)
	}
	return parseValue(s.Value[1])
}

func parseValue(v any) (float64, error) {
	str, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("value %v is not a string", v)
	}
	return strconv.ParseFloat(str, 64)
}

func parseTime(v any) (time.Time, error) {
	f, ok := v.(float64)
	if !ok {
		return time.Time{}, fmt.Errorf("timestamp %v is not a number", v)
	}
	return time.UnixMilli(int64(math.Round(f * 1000))), nil
}

// get fetches path with params and decodes the "data" of a successful answer into data.
func (a API) get(path string, params url.Values, data any) error {
	resp, err := a.Client.Get(a.Base + path + "?" + params.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var r struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("%s %v: HTTP %d: %w: %.300s", path, params, resp.StatusCode, err, body)
	}
	if r.Status != "success" {
		return fmt.Errorf("%s %v: %s", path, params, r.Error)
	}
	return json.Unmarshal(r.Data, data)
}

// Query runs an instant query and returns its vector.
func (a API) Query(q string) ([]Sample, error) {
	var d struct {
		ResultType string   `json:"resultType"`
		Result     []Sample `json:"result"`
	}
	if err := a.get("/api/v1/query", url.Values{"query": {q}}, &d); err != nil {
		return nil, err
	}
	if d.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: result type %q, want vector", q, d.ResultType)
	}
	return d.Result, nil
}

// Floats runs a query and returns its values keyed by the given labels'
// values joined with " "; two samples with the same key are an error.
func (a API) Floats(q string, labels ...string) (map[string]float64, error) {
	res, err := a.Query(q)
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(res))
	for _, s := range res {
		v, err := s.Float()
		if err != nil {
			return nil, err
		}
		k := Key(s.Metric, labels...)
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("query %q: two samples for %q", q, k)
		}
		out[k] = v
	}
	return out, nil
}

// Key joins the values of labels in m with " ".
func Key(m map[string]string, labels ...string) string {
	var b strings.Builder
	for i, l := range labels {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(m[l])
	}
	return b.String()
}

// Point is one stored sample.
type Point struct {
	T time.Time
	V float64
}

// Series is a series with its stored float samples, oldest first.
type Series struct {
	Metric map[string]string
	Points []Point
}

// Raw returns the samples Prometheus stored for the series matching selector
// in the window before at, as they are: no lookback, no extrapolation, stale
// markers left out (the query API does not return them).
func (a API) Raw(selector string, window time.Duration, at time.Time) ([]Series, error) {
	q := fmt.Sprintf("%s[%dms]", selector, window.Milliseconds())
	return a.matrix("/api/v1/query", q, url.Values{"query": {q}, "time": {unixSeconds(at)}})
}

// labelString renders a label set in a stable order, for sorting and messages.
func labelString(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q,", k, m[k])
	}
	return b.String()
}

// LabelString renders a series' labels for messages.
func (s Series) LabelString() string {
	return "{" + strings.TrimSuffix(labelString(s.Metric), ",") + "}"
}

// Target is one scrape target as the targets API reports it.
type Target struct {
	Labels     map[string]string `json:"labels"`
	ScrapeURL  string            `json:"scrapeUrl"`
	Health     string            `json:"health"`
	LastError  string            `json:"lastError"`
	LastScrape string            `json:"lastScrape"`
	Duration   float64           `json:"lastScrapeDuration"`
}

// Targets returns the active targets.
func (a API) Targets() ([]Target, error) {
	var d struct {
		ActiveTargets []Target `json:"activeTargets"`
	}
	err := a.get("/api/v1/targets", url.Values{"state": {"active"}}, &d)
	return d.ActiveTargets, err
}

// TargetState describes the scrapes for a failure message.
func (a API) TargetState() string {
	targets, err := a.Targets()
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, t := range targets {
		fmt.Fprintf(&b, "%s: %s (last %s, %.3fs) %s\n", t.ScrapeURL, t.Health, t.LastScrape, t.Duration, t.LastError)
	}
	return b.String()
}

// Histogram is a native histogram as the query API returns it.
type Histogram struct {
	Count, Sum float64
	Buckets    []Bucket
}

// Bucket is one bucket of a native histogram: Count observations between
// Lower and Upper, Boundaries saying which ends are inclusive (0: upper only,
// as every bucket of an exponential histogram except the zero bucket; 1:
// lower only; 2: neither; 3: both).
type Bucket struct {
	Boundaries   int
	Lower, Upper float64
	Count        float64
}

// Contains reports whether v falls into the bucket.
func (b Bucket) Contains(v float64) bool {
	lowerIn, upperIn := b.Boundaries == 1 || b.Boundaries == 3, b.Boundaries == 0 || b.Boundaries == 3
	return (v > b.Lower || lowerIn && v == b.Lower) && (v < b.Upper || upperIn && v == b.Upper)
}

// NativeHistogram is the sample's native histogram.
func (s Sample) NativeHistogram() (Histogram, error) {
	if len(s.Histogram) != 2 {
		return Histogram{}, fmt.Errorf("%v is not a native histogram (value: %v)", s.Metric, s.Value)
	}
	// The histogram is an object of strings, decoded as any: re-encode it.
	raw, err := json.Marshal(s.Histogram[1])
	if err != nil {
		return Histogram{}, err
	}
	var h struct {
		Count   string  `json:"count"`
		Sum     string  `json:"sum"`
		Buckets [][]any `json:"buckets"`
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return Histogram{}, err
	}
	var out Histogram
	if out.Count, err = strconv.ParseFloat(h.Count, 64); err != nil {
		return out, err
	}
	if out.Sum, err = strconv.ParseFloat(h.Sum, 64); err != nil {
		return out, err
	}
	for _, b := range h.Buckets {
		if len(b) != 4 {
			return out, fmt.Errorf("bucket %v", b)
		}
		rule, ok := b[0].(float64)
		if !ok {
			return out, fmt.Errorf("bucket %v: boundary rule", b)
		}
		var bk Bucket
		bk.Boundaries = int(rule)
		for i, dst := range []*float64{&bk.Lower, &bk.Upper, &bk.Count} {
			if *dst, err = parseValue(b[i+1]); err != nil {
				return out, fmt.Errorf("bucket %v: %w", b, err)
			}
		}
		out.Buckets = append(out.Buckets, bk)
	}
	return out, nil
}

// Exemplar is one stored exemplar.
type Exemplar struct {
	Labels map[string]string
	Value  float64
	T      time.Time
}

// ExemplarSeries is a series with the exemplars stored for it.
type ExemplarSeries struct {
	Metric    map[string]string
	Exemplars []Exemplar
}

// Exemplars returns the exemplars stored between start and end for the
// series that query selects (/api/v1/query_exemplars).
func (a API) Exemplars(query string, start, end time.Time) ([]ExemplarSeries, error) {
	var d []struct {
		SeriesLabels map[string]string `json:"seriesLabels"`
		Exemplars    []struct {
			Labels    map[string]string `json:"labels"`
			Value     any               `json:"value"`
			Timestamp any               `json:"timestamp"`
		} `json:"exemplars"`
	}
	params := url.Values{"query": {query},
		"start": {unixSeconds(start)},
		"end":   {unixSeconds(end)}}
	if err := a.get("/api/v1/query_exemplars", params, &d); err != nil {
		return nil, err
	}
	out := make([]ExemplarSeries, 0, len(d))
	for _, s := range d {
		es := ExemplarSeries{Metric: s.SeriesLabels}
		for _, e := range s.Exemplars {
			v, err := parseValue(e.Value)
			if err != nil {
				return nil, err
			}
			ts, err := parseTime(e.Timestamp)
			if err != nil {
				return nil, err
			}
			es.Exemplars = append(es.Exemplars, Exemplar{Labels: e.Labels, Value: v, T: ts})
		}
		out = append(out, es)
	}
	sort.Slice(out, func(i, j int) bool { return labelString(out[i].Metric) < labelString(out[j].Metric) })
	return out, nil
}

// Range runs a range query from start to end, a sample every step, and
// returns its series, points oldest first (NaN values included: a
// histogram_quantile over no observations).
func (a API) Range(q string, start, end time.Time, step time.Duration) ([]Series, error) {
	return a.matrix("/api/v1/query_range", q, url.Values{"query": {q}, "start": {unixSeconds(start)}, "end": {unixSeconds(end)},
		"step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}})
}

// unixSeconds is t as the query API takes it.
func unixSeconds(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// matrix runs query q at path and returns the matrix it answers, each
// series' points oldest first, the series in label order.
func (a API) matrix(path, q string, params url.Values) ([]Series, error) {
	var d struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Values [][]any           `json:"values"`
		} `json:"result"`
	}
	if err := a.get(path, params, &d); err != nil {
		return nil, err
	}
	if d.ResultType != "matrix" {
		return nil, fmt.Errorf("query %q: result type %q, want matrix", q, d.ResultType)
	}
	out := make([]Series, 0, len(d.Result))
	for _, r := range d.Result {
		s := Series{Metric: r.Metric, Points: make([]Point, 0, len(r.Values))}
		for _, pair := range r.Values {
			if len(pair) != 2 {
				return nil, fmt.Errorf("query %q: sample %v", q, pair)
			}
			ts, err := parseTime(pair[0])
			if err != nil {
				return nil, err
			}
			v, err := parseValue(pair[1])
			if err != nil {
				return nil, err
			}
			s.Points = append(s.Points, Point{T: ts, V: v})
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return labelString(out[i].Metric) < labelString(out[j].Metric) })
	return out, nil
}
