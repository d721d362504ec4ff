// Package cardinality is the exporter's view of what fills it: the
// resources (agents) and families holding the most series, how close the
// store is to its limits, who the limits refuse, which label names of a
// family or resource have the most values, and how series came and went
// over the last minutes; what each aggregate rule absorbs and serves, and,
// for a family whose label explodes, the rule that would sum it away. It
// serves one report as an HTML page and as JSON.
//
// The per-resource and per-family counts are kept by the store as series
// come and go; the label counts read label sets a chunk at a time, as a
// scrape does, and stop at scan_timeout.
package cardinality // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/cardinality"

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// Options configure a View.
type Options struct {
	// Top is how many resources and families a report lists unless the
	// request asks for another number (?top=, at most MaxTop).
	Top int
	// ScanTimeout bounds the label count of one report.
	ScanTimeout time.Duration
	// MaxDescriptors and Descriptors are the descriptor cache's bound and size.
	MaxDescriptors int
	Descriptors    func() int
	// Now is the store clock.
	Now func() time.Time
	// Aggregates reports each aggregate rule (internal/aggregate), in
	// configuration order; nil when there are none.
	Aggregates func() []AggregateStat
	// MaxAggregateSources and AggregateSources are the bound of the
	// sources the rules hold and how many they hold.
	MaxAggregateSources int
	AggregateSources    func() int64
	// Origin maps a label of a family back to the OTLP metric name and point
	// attribute key it was made from, for a suggested rule that sums it
	// away; ok is false when it is not known (nil: never).
	Origin func(family, label string) (metric, key string, ok bool)
}

// AggregateStat is one aggregate rule as the view shows it.
type AggregateStat struct {
	// Rule is the rule's place in the aggregate list.
	Rule        int
	Metrics     []string
	By, Without []string
	// Sources counts the agents' series the rule absorbs (their state is
	// held); Series the aggregated series it serves.
	Sources, Series int64
}

// MaxTop bounds ?top=.
const MaxTop = 1000

// maxConcurrent bounds the reports built at once: each may scan for
// ScanTimeout; one more request is answered 503.
const maxConcurrent = 2

// View serves the reports of a store.
type View struct {
	store   *store.Store
	changes *Changes
	opts    Options
	slots   chan struct{}
}

// New returns the view of st, with the changes counted in c.
func New(st *store.Store, c *Changes, opts Options) *View {
	return &View{store: st, changes: c, opts: opts, slots: make(chan struct{}, maxConcurrent)}
}

// ServeHTTP answers GET and HEAD with a report: JSON when the request asks
// for it with ?format=json or an Accept header that prefers
// application/json to text/html, the page otherwise.
func (v *View) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	q, err := v.parseQuery(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	select {
	case v.slots <- struct{}{}:
		defer func() { <-v.slots }()
	default:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many cardinality reports in flight", http.StatusServiceUnavailable)
		return
	}
	rep := v.build(q)
	status := http.StatusOK
	if rep.Error != "" {
		status = http.StatusNotFound
	}
	var body bytes.Buffer
	contentType := "text/html; charset=utf-8"
	if wantsJSON(r) {
		contentType = "application/json"
		enc := json.NewEncoder(&body)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = renderPage(&body, rep, r.URL.Path, topParam(r))
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(body.Len()))
	h.Set("Cache-Control", "no-store")
	h.Add("Vary", "Accept")
	w.WriteHeader(status)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body.Bytes())
	}
}

// badRequest is a query the view cannot answer.
type badRequest string

func (e badRequest) Error() string { return string(e) }

func (v *View) parseQuery(r *http.Request) (Query, error) {
	p := r.URL.Query()
	q := Query{Top: v.opts.Top, Family: p.Get("family"), Job: p.Get("job"), Instance: p.Get("instance")}
	q.Resource = p.Has("job") || p.Has("instance")
	if q.Resource && q.Family != "" {
		return q, badRequest("choose a family or a resource (job and instance), not both")
	}
	if s := p.Get("top"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxTop {
			return q, badRequest("top: want a number from 1 to " + strconv.Itoa(MaxTop))
		}
		q.Top = n
	}
	switch f := p.Get("format"); f {
	case "", "json", "html":
	default:
		return q, badRequest("format: want json or html, got " + strconv.Quote(f))
	}
	return q, nil
}

// wantsJSON tells whether the request asks for JSON: ?format=json, or an
// Accept header that ranks application/json above text/html (curl's */*
// and a browser's headers get the page).
func wantsJSON(r *http.Request) bool {
	switch r.URL.Query().Get("format") {
	case "json":
		return true
	case "html":
		return false
	}
	jsonQ, htmlQ := 0.0, 0.0
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if s, ok := params["q"]; ok {
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				q = f
			}
		}
		switch mt {
		case "application/json":
			jsonQ = max(jsonQ, q)
		case "text/html":
			htmlQ = max(htmlQ, q)
		}
	}
	return jsonQ > htmlQ
}

// topParam is the ?top= of the request, 0 without one; links keep it.
func topParam(r *http.Request) int {
	n, _ := strconv.Atoi(r.URL.Query().Get("top"))
	return n
}
