package fleet

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/statsgate/statsgate/internal/agentmanifest"
)

// holdings is what the replicas held at one moment: per replica, the series
// of each agent (job and instance), read from the replica's cardinality view
// (testdata/gateway.yaml turns it on). The view is read outside /metrics, so
// the sampling is not a scraper to the replicas (the release of delta runs
// goes by scrapers).
type holdings struct {
	at      time.Time
	byAgent map[string]map[string]int64 // job, 0xff, instance -> replica -> series
	err     error                       // a replica that did not answer (restarting)
}

type cardinalityReport struct {
	Resources []struct {
		Job      string `json:"job"`
		Instance string `json:"instance"`
		Series   int64  `json:"series"`
	} `json:"resources"`
}

// agentKey is an agent's key in holdings.byAgent.
func agentKey(job, instance string) string { return job + "\xff" + instance }

// readHoldings reads every replica's cardinality view.
func readHoldings(replicas []*replica) holdings {
	h := holdings{at: time.Now(), byAgent: map[string]map[string]int64{}}
	client := &http.Client{Timeout: 2 * time.Second}
	for _, r := range replicas {
		resp, err := client.Get("http://" + r.metrics + "/cardinality?format=json&top=1000")
		if err != nil {
			h.err = fmt.Errorf("%s: %w", r.name, err)
			continue
		}
		var rep cardinalityReport
		err = json.NewDecoder(resp.Body).Decode(&rep)
		resp.Body.Close()
		if err != nil {
			h.err = fmt.Errorf("%s: %w", r.name, err)
			continue
		}
		for _, res := range rep.Resources {
			if res.Series == 0 {
				continue
			}
			k := agentKey(res.Job, res.Instance)
			if h.byAgent[k] == nil {
				h.byAgent[k] = map[string]int64{}
			}
			h.byAgent[k][r.name] = res.Series
		}
	}
	return h
}

// within says whether the sample was taken in one of windows and read
// from every replica.
func (h holdings) within(windows []window) bool {
	return h.err == nil && slices.ContainsFunc(windows, func(w window) bool { return !h.at.Before(w.from) && h.at.Before(w.to) })
}

// copies is, for the agents of job, the series held summed over the
// replicas divided by the distinct series: an agent's distinct series are
// those of its fullest copy (every export carries all of an agent's series).
func (h holdings) copies(jobs ...string) (float64, bool) {
	var held, distinct int64
	for k, perReplica := range h.byAgent {
		if j, _, _ := strings.Cut(k, "\xff"); !slices.Contains(jobs, j) {
			continue
		}
		var most int64
		for _, n := range perReplica {
			held += n
			most = max(most, n)
		}
		distinct += most
	}
	return float64(held) / float64(distinct), distinct > 0
}

// agentSeries is how many series of job's agents the replica holds.
func (h holdings) agentSeries(replica, job string) int64 {
	var n int64
	for k, perReplica := range h.byAgent {
		if j, _, _ := strings.Cut(k, "\xff"); j == job || job == "" && strings.HasPrefix(j, "fleet-") {
			n += perReplica[replica]
		}
	}
	return n
}

// sampler reads the holdings every interval until stopped.
type sampler struct {
	mu      sync.Mutex
	samples []holdings
	stop    chan struct{}
	done    chan struct{}
}

func startSampler(t *testing.T, replicas []*replica, every time.Duration) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
				h := readHoldings(replicas)
				s.mu.Lock()
				s.samples = append(s.samples, h)
				s.mu.Unlock()
			}
		}
	}()
	t.Cleanup(s.halt)
	return s
}

func (s *sampler) halt() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

// window is a span of the run in which the fleet is meant to be steady.
type window struct{ from, to time.Time }

// copiesFigure is what the samples in the windows say of job's copies.
type copiesFigure struct {
	mean, max float64
	samples   int
}

func (f copiesFigure) String() string {
	return fmt.Sprintf("%.2f (max %.2f, %d samples)", f.mean, f.max, f.samples)
}

func (s *sampler) copies(job string, windows []window) copiesFigure {
	return s.copiesOf([]string{job}, windows)
}

// copiesOf is copies for the series of several jobs together.
func (s *sampler) copiesOf(jobs []string, windows []window) copiesFigure {
	s.mu.Lock()
	defer s.mu.Unlock()
	var f copiesFigure
	var sum float64
	for _, h := range s.samples {
		if !h.within(windows) {
			continue
		}
		if c, ok := h.copies(jobs...); ok {
			sum += c
			f.max = max(f.max, c)
			f.samples++
		}
	}
	if f.samples > 0 {
		f.mean = sum / float64(f.samples)
	}
	return f
}

// visits is what the samples say of the replicas an agent exported to.
type visits struct {
	// checked counts, over the samples and the agents, the replicas an
	// agent exported to within the span before the sample.
	checked int
	// spread counts the (sample, agent) pairs with more than one such
	// replica: the agent moved within the span.
	spread int
	// unheld describes each replica that was exported to within the span
	// but held none of the agent's series at the sample.
	unheld []string
}

// visitsOf checks, at each sample in windows, every agent of job (its
// manifest m, each export's replica filled in) against the replicas'
// holdings: which replicas it exported to within span before the sample,
// and whether each of them held its series then.
func (s *sampler) visitsOf(job string, m agentmanifest.OTLP, windows []window, span time.Duration) visits {
	s.mu.Lock()
	defer s.mu.Unlock()
	var v visits
	for _, h := range s.samples {
		if !h.within(windows) {
			continue
		}
		for _, a := range m.Agents {
			held := h.byAgent[agentKey(job, a.InstanceID)]
			var visited []string
			for _, e := range a.Exports {
				// An acknowledged export was ingested before its At; the
				// sample was read after h.at.
				if age := h.at.Sub(e.At); age >= 0 && age <= span && !slices.Contains(visited, e.Replica) {
					visited = append(visited, e.Replica)
				}
			}
			v.checked += len(visited)
			if len(visited) > 1 {
				v.spread++
			}
			for _, r := range visited {
				if held[r] == 0 {
					v.unheld = append(v.unheld, fmt.Sprintf("%s at %s: exported to %s within %v, which held none of its series (held: %v)",
						a.InstanceID, h.at.Format(time.StampMilli), r, span, held))
				}
			}
		}
	}
	return v
}
