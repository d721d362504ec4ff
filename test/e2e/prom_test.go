package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// promAPI queries a Prometheus server's HTTP API.
type promAPI struct {
	base   string // http://host:port
	client *http.Client
}

// sample is one element of an instant vector: a float value or, for a
// native histogram, a histogram.
type sample struct {
	Metric    map[string]string `json:"metric"`
	Value     []any             `json:"value"`
	Histogram []any             `json:"histogram"`
}

func (s sample) float() (float64, error) {
	if len(s.Value) != 2 {
		return 0, fmt.Errorf("%v has no float value (histogram: %v)", s.Metric, s.Histogram != nil)
	}
	str, ok := s.Value[1].(string)
	if !ok {
		return 0, fmt.Errorf("%v: value %v is not a string", s.Metric, s.Value[1])
	}
	return strconv.ParseFloat(str, 64)
}

// query runs an instant query and returns its vector.
func (p promAPI) query(q string) ([]sample, error) {
	req, err := http.NewRequest(http.MethodGet, p.base+"/api/v1/query?"+url.Values{"query": {q}}.Encode(), nil)
	if err != nil {
		return nil, err
	}
	code, body, err := httpStatus(p.client, req)
	if err != nil {
		return nil, err
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string   `json:"resultType"`
			Result     []sample `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("query %q: HTTP %d: %w: %s", q, code, err, body)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", q, r.Error)
	}
	if r.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q: result type %q, want vector", q, r.Data.ResultType)
	}
	return r.Data.Result, nil
}

// floats runs a query and returns its values keyed by the given labels'
// values joined with " ".
func (p promAPI) floats(q string, labels ...string) (map[string]float64, error) {
	res, err := p.query(q)
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(res))
	for _, s := range res {
		v, err := s.float()
		if err != nil {
			return nil, err
		}
		k := key(s.Metric, labels...)
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("query %q: two samples for %q", q, k)
		}
		out[k] = v
	}
	return out, nil
}

func key(m map[string]string, labels ...string) string {
	var k string
	for i, l := range labels {
		if i > 0 {
			k += " "
		}
		k += m[l]
	}
	return k
}

type target struct {
	ScrapeURL  string  `json:"scrapeUrl"`
	Health     string  `json:"health"`
	LastError  string  `json:"lastError"`
	LastScrape string  `json:"lastScrape"`
	Duration   float64 `json:"lastScrapeDuration"`
}

func (p promAPI) targets() ([]target, error) {
	req, err := http.NewRequest(http.MethodGet, p.base+"/api/v1/targets?state=active", nil)
	if err != nil {
		return nil, err
	}
	_, body, err := httpStatus(p.client, req)
	if err != nil {
		return nil, err
	}
	var r struct {
		Data struct {
			ActiveTargets []target `json:"activeTargets"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%w: %s", err, body)
	}
	return r.Data.ActiveTargets, nil
}

// targetState describes the scrapes for a failure message.
func (p promAPI) targetState() string {
	targets, err := p.targets()
	if err != nil {
		return err.Error()
	}
	s := fmt.Sprintf("%+v", targets)
	// The samples of the last minute's scrapes, oldest first.
	req, err := http.NewRequest(http.MethodGet, p.base+"/api/v1/query?"+url.Values{"query": {"scrape_samples_scraped[1m]"}}.Encode(), nil)
	if err != nil {
		return s + "; " + err.Error()
	}
	_, body, err := httpStatus(p.client, req)
	return fmt.Sprintf("%s; scrape_samples_scraped[1m]: %s %v", s, body, err)
}

func newPromAPI(addr string) promAPI {
	return promAPI{base: "http://" + addr, client: &http.Client{Timeout: 5 * time.Second}}
}
