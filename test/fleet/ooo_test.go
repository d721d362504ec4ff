package fleet

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// outOfOrder is one sample Prometheus refused as out of order: with
// --log.level=debug, Prometheus 3 logs each with its series as scraped
// (scrape/scrape.go), which says whose copy it was. Its own counter,
// prometheus_target_scrapes_sample_out_of_order_total, has no labels.
type outOfOrder struct {
	at            time.Time
	target        string // the replica's /metrics
	job, instance string
	series        string
}

// oooLine matches the line, e.g.
//
//	time=2026-11-26T01:38:23.522Z level=DEBUG source=scrape.go:2176 msg="Out of order sample" component="scrape manager" scrape_pool=t target=http://127.0.0.1:19999/metrics series="x_total{job=\"fleet-a\",instance=\"i-1\"}"
var oooLine = regexp.MustCompile(`^time=(\S+) .*msg="Out of order sample" .*target=(\S+) series=("(?:[^"\\]|\\.)*")$`)

var (
	jobLabel      = regexp.MustCompile(`[{,]job="([^"]*)"`)
	instanceLabel = regexp.MustCompile(`[{,]instance="([^"]*)"`)
)

// readOutOfOrder reads the refusals from a Prometheus log.
func readOutOfOrder(path string) ([]outOfOrder, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []outOfOrder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, `msg="Out of order sample"`) {
			continue
		}
		m := oooLine.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("an out-of-order line of another format: %s", line)
		}
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			return nil, err
		}
		series, err := strconv.Unquote(m[3])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m[3], err)
		}
		o := outOfOrder{at: at, target: m[2], series: series}
		if j := jobLabel.FindStringSubmatch(series); j != nil {
			o.job = j[1]
		}
		if i := instanceLabel.FindStringSubmatch(series); i != nil {
			o.instance = i[1]
		}
		out = append(out, o)
	}
	return out, sc.Err()
}

// refusalsPerMinute counts the refusals of job's series per minute of span.
func refusalsPerMinute(refusals []outOfOrder, job string, span time.Duration) float64 {
	n := 0
	for _, o := range refusals {
		if job == "" || o.job == job {
			n++
		}
	}
	return float64(n) / span.Minutes()
}

// lateRefusals returns the refusals of an agent's series more than within
// after its latest move before them: a replica the agent left still served a
// copy then. moves are the times the agent's exports began on another
// replica, or a replica went away.
func lateRefusals(refusals []outOfOrder, instance string, moves []time.Time, within time.Duration) []outOfOrder {
	var late []outOfOrder
	for _, o := range refusals {
		if o.instance != instance {
			continue
		}
		var last time.Time
		for _, m := range moves {
			if !m.After(o.at) && m.After(last) {
				last = m
			}
		}
		if last.IsZero() || o.at.Sub(last) > within {
			late = append(late, o)
		}
	}
	return late
}

func TestOutOfOrderLinesOfPrometheus3(t *testing.T) {
	// Lines written by Prometheus 3.16 (--log.level=debug) scraping a target
	// whose sample timestamps went back.
	log := `time=2026-11-26T01:38:22.522Z level=DEBUG source=manager.go:230 msg="Starting target" component="scrape manager"
time=2026-11-26T01:38:23.522Z level=DEBUG source=scrape.go:2176 msg="Out of order sample" component="scrape manager" scrape_pool=t target=http://127.0.0.1:19999/metrics series="x_total{job=\"fleet-a\",instance=\"i-1\"}"
time=2026-11-26T01:38:25.522Z level=DEBUG source=scrape.go:2176 msg="Out of order sample" component="scrape manager" scrape_pool=t target=http://127.0.0.1:19999/metrics series="x_total{job=\"fleet-a\",instance=\"i-1\"}"
`
	path := t.TempDir() + "/prometheus.log"
	require.NoError(t, os.WriteFile(path, []byte(log), 0o600))
	got, err := readOutOfOrder(path)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, outOfOrder{
		at: time.Date(2026, 11, 26, 1, 38, 23, 522e6, time.UTC), target: "http://127.0.0.1:19999/metrics",
		job: "fleet-a", instance: "i-1", series: `x_total{job="fleet-a",instance="i-1"}`,
	}, got[0])
	assert.Equal(t, 2/(3*time.Second).Minutes(), refusalsPerMinute(got, "fleet-a", 3*time.Second))
	assert.Zero(t, refusalsPerMinute(got, "fleet-b", 3*time.Second))

	move := time.Date(2026, 11, 26, 1, 38, 22, 0, time.UTC)
	assert.Empty(t, lateRefusals(got, "i-1", []time.Time{move}, 4*time.Second))
	assert.Equal(t, got[1:], lateRefusals(got, "i-1", []time.Time{move}, 2*time.Second))
	assert.Equal(t, got, lateRefusals(got, "i-1", nil, time.Hour), "a refusal before any move is late")
}
