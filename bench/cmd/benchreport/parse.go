package main

import (
	"bufio"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// row is one benchmark case without its exporter key, e.g.
// "Scrape" + {series: 100k, format: text}.
type row struct {
	bench string            // top-level name without "Benchmark"
	keys  []string          // sub-benchmark keys in order, exporter removed
	vals  map[string]string // key -> value
	id    string            // bench + "/" + keys joined
}

type results struct {
	rows   []*row
	byID   map[string]*row
	values map[string]map[string]map[string][]float64 // row id -> exporter -> unit -> values
	config map[string]string                          // goos, goarch, cpu, pkg
	notes  []string
	skips  []string
}

func newResults() *results {
	return &results{
		byID:   map[string]*row{},
		values: map[string]map[string]map[string][]float64{},
		config: map[string]string{},
	}
}

var procSuffix = regexp.MustCompile(`-\d+$`)

func (r *results) parseFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return r.parse(f)
}

func (r *results) parse(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "NOTE: "):
			if n := strings.TrimPrefix(line, "NOTE: "); !slices.Contains(r.notes, n) {
				r.notes = append(r.notes, n)
			}
		case strings.HasPrefix(line, "Benchmark"):
			r.parseBench(line)
		case strings.Contains(line, "--- SKIP: Benchmark"):
			name := strings.TrimSpace(line[strings.Index(line, "Benchmark"):])
			if !slices.Contains(r.skips, name) {
				r.skips = append(r.skips, name)
			}
		default:
			if k, v, ok := strings.Cut(line, ": "); ok && (k == "goos" || k == "goarch" || k == "cpu" || k == "pkg") {
				r.config[k] = strings.TrimSpace(v)
			}
		}
	}
	return sc.Err()
}

func (r *results) parseBench(line string) {
	fields := strings.Fields(line)
	if len(fields) < 4 || len(fields)%2 != 0 {
		return
	}
	if _, err := strconv.Atoi(fields[1]); err != nil {
		return
	}
	name := procSuffix.ReplaceAllString(fields[0], "")
	parts := strings.Split(strings.TrimPrefix(name, "Benchmark"), "/")
	rw := &row{bench: parts[0], vals: map[string]string{}}
	exporter := ""
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			k, v = p, p
		}
		if k == "exporter" {
			exporter = v
			continue
		}
		rw.keys = append(rw.keys, k)
		rw.vals[k] = v
	}
	if exporter == "" {
		return
	}
	var id strings.Builder
	id.WriteString(rw.bench)
	for _, k := range rw.keys {
		id.WriteString("/" + k + "=" + rw.vals[k])
	}
	rw.id = id.String()
	if _, ok := r.byID[rw.id]; !ok {
		r.byID[rw.id] = rw
		r.rows = append(r.rows, rw)
		r.values[rw.id] = map[string]map[string][]float64{}
	}
	byExp := r.values[rw.id]
	if byExp[exporter] == nil {
		byExp[exporter] = map[string][]float64{}
	}
	for i := 2; i+1 < len(fields); i += 2 {
		v, err := strconv.ParseFloat(fields[i], 64)
		if err != nil {
			continue
		}
		byExp[exporter][fields[i+1]] = append(byExp[exporter][fields[i+1]], v)
	}
}

// median returns the median of the runs of one metric, NaN when there are none.
func (r *results) median(id, exporter, unit string) (float64, int) {
	vs := r.values[id][exporter][unit]
	if len(vs) == 0 {
		return math.NaN(), 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2], n
	}
	return (s[n/2-1] + s[n/2]) / 2, n
}

// rowsOf returns the rows of one benchmark, sorted by format, encoding,
// kind, label shape, then series count.
func (r *results) rowsOf(bench string) []*row {
	var out []*row
	for _, rw := range r.rows {
		if rw.bench == bench {
			out = append(out, rw)
		}
	}
	order := []string{"format", "encoding", "kind", "series"}
	slices.SortStableFunc(out, func(a, b *row) int { return compareBy(order, a, b) })
	return out
}

// valueOrder ranks the values of the keys whose order is not alphabetical;
// unknown values come after the known ones.
var valueOrder = map[string][]string{
	"format":   {"text", "text-utf8", "openmetrics", "protobuf"},
	"encoding": {"identity", "gzip"},
	"kind":     {"existing", "new"},
}

// rank places a key's value: series by count, others by valueOrder.
func rank(k, v string) int {
	if k == "series" {
		return int(seriesCount(v))
	}
	if vs, ok := valueOrder[k]; ok {
		if i := slices.Index(vs, v); i >= 0 {
			return i
		}
		return len(vs)
	}
	return 0
}

// compareBy orders two rows by the given keys in turn.
func compareBy(keys []string, a, b *row) int {
	for _, k := range keys {
		if d := rank(k, a.vals[k]) - rank(k, b.vals[k]); d != 0 {
			return d
		}
	}
	return 0
}

// seriesCount parses "10k", "100k", "1M".
func seriesCount(v string) float64 {
	mult := 1.0
	switch {
	case strings.HasSuffix(v, "k"):
		mult, v = 1e3, strings.TrimSuffix(v, "k")
	case strings.HasSuffix(v, "M"):
		mult, v = 1e6, strings.TrimSuffix(v, "M")
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0
	}
	return f * mult
}
