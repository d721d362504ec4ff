package fleet

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/internal/agentmanifest"
)

// holdings is what the replicas held at one moment: per replica, the series
// of each agent (job and instance), read from the replica's cardinality view
// (testdata/gateway.yaml turns it on). The view is read outside /metrics, so
// the sampling is not a scraper to the replicas (the release of delta runs
// goes by scrapers).
type holdings struct {
	// at is when the first replica was asked, done when the last answered:
	// the replicas are read one after the other, not at one instant.
	at, done time.Time
	byAgent  map[string]map[string]int64 // job, 0xff, instance -> replica -> series
	err      error                       // a replica that did not answer (restarting)
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
	h.done = time.Now()
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
	return s.copiesOf([]string{job}, windows, 0)
}

// copiesOf is copies for the series of several jobs together, over the
// samples read within readWithin (any, when 0).
func (s *sampler) copiesOf(jobs []string, windows []window, readWithin time.Duration) copiesFigure {
	s.mu.Lock()
	defer s.mu.Unlock()
	var f copiesFigure
	var sum float64
	for _, h := range s.samples {
		if !h.within(windows) || readWithin > 0 && h.done.Sub(h.at) > readWithin {
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

// overlap is a stretch of consecutive samples in which an agent was held by
// more than one replica.
type overlap struct {
	// from is when the first of the samples had been read from every
	// replica, to when the last began to be read; to less from is never more
	// than the time a replica the agent left went on holding it (see
	// overlapsOf).
	from, to time.Time
	samples  int
	// holders is the most replicas that held the agent at one sample.
	holders int
}

func (o overlap) length() time.Duration { return max(o.to.Sub(o.from), 0) }

// overlaps is what overlapsOf found for one job.
type overlaps struct {
	// byAgent are the stretches of each agent (instance) that had any.
	byAgent map[string][]overlap
	// samples counts the samples read whole within the bound.
	samples int
}

// longest is the longest stretch of any agent.
func (o overlaps) longest() (string, overlap) {
	var inst string
	var l overlap
	for i, os := range o.byAgent {
		for _, s := range os {
			if inst == "" || s.length() > l.length() {
				inst, l = i, s
			}
		}
	}
	return inst, l
}

// overlapsOf returns, per agent (instance) of job, the stretches of
// consecutive samples in windows in which more than one replica held some of
// its series. A stretch ends at a sample that shows one holder or none, and
// at a gap in the sampling: a sample that took longer than readWithin to
// read (it is left out, as one that a replica did not answer is), or one
// that began more than gapWithin after the one before.
//
// A sample shows two holders when it read the replica the agent left before
// that one let it go, and the one it moved to after the move: it began
// before the end of the move's overlap and was read whole after its start.
// So the length of a stretch made by one move is less than that overlap. A
// stretch is made by one move when the agent's moves are further apart than
// an overlap, gapWithin and readWithin together: some sample then falls
// whole between the end of one overlap and the next move.
func (s *sampler) overlapsOf(job string, windows []window, gapWithin, readWithin time.Duration) overlaps {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := overlaps{byAgent: map[string][]overlap{}}
	for _, w := range windows {
		open := map[string]*overlap{}
		closeAll := func() {
			for inst, o := range open {
				out.byAgent[inst] = append(out.byAgent[inst], *o)
			}
			clear(open)
		}
		var prev time.Time
		for _, h := range s.samples {
			if !h.within([]window{w}) || h.done.Sub(h.at) > readWithin {
				continue
			}
			out.samples++
			if !prev.IsZero() && h.at.Sub(prev) > gapWithin {
				closeAll()
			}
			prev = h.at
			for k, perReplica := range h.byAgent {
				j, inst, _ := strings.Cut(k, "\xff")
				if j != job || len(perReplica) < 2 {
					continue
				}
				if o := open[inst]; o != nil {
					o.to = h.at
					o.samples++
					o.holders = max(o.holders, len(perReplica))
				} else {
					open[inst] = &overlap{from: h.done, to: h.at, samples: 1, holders: len(perReplica)}
				}
			}
			for inst, o := range open {
				if len(h.byAgent[agentKey(job, inst)]) < 2 {
					out.byAgent[inst] = append(out.byAgent[inst], *o)
					delete(open, inst)
				}
			}
		}
		closeAll()
	}
	return out
}

// copiesBound is what the fleet's design allows the agents of a job in the
// steady phases.
type copiesBound struct {
	// mean bounds the copies per series, over the samples.
	mean float64
	// left bounds how long a replica an agent left goes on holding it, per
	// move: the stretches of overlapsOf.
	left time.Duration
}

// copiesBounds are the bounds of the jobs whose agents stay on one replica
// between moves (the agents balanced per request are held by up to every
// replica, by the damping): the cumulative gRPC agents and services, and
// the delta agents on gRPC and on the sticky HTTP balancer.
var copiesBounds = map[string]copiesBound{
	grpcService:       {mean: maxCopies, left: leftCumulative},
	jobGRPCCumulative: {mean: maxCopies, left: leftCumulative},
	jobGRPCDelta:      {mean: maxCopiesDelta, left: leftDelta},
	jobHTTPDelta:      {mean: maxCopiesDelta, left: leftDelta},
}

// checkCopies asserts, for the agents of job in windows, that the series
// held summed over the replicas stay within the job's copiesBound: the
// mean copies per series, and per agent every stretch of samples in which
// more than one replica held it, both in length and in the replicas that
// held it (two: the one it left and the one it moved to). It tells c what
// does not hold, and fails t when the samples cannot say.
func checkCopies(t *testing.T, c assert.TestingT, s *sampler, windows []window, job string) {
	t.Helper()
	b, ok := copiesBounds[job]
	require.True(t, ok, "%s: no copies bound", job)
	f := s.copiesOf([]string{job}, windows, sampleRead)
	require.Positive(t, f.samples, "%s: samples of the steady phases read within %v", job, sampleRead)
	assert.LessOrEqual(c, f.mean, b.mean, "%s: copies per series in the steady phases: %v", job, f)
	o := s.overlapsOf(job, windows, sampleGap, sampleRead)
	stretches := 0
	for _, inst := range slices.Sorted(maps.Keys(o.byAgent)) {
		for _, st := range o.byAgent[inst] {
			stretches++
			at := st.from.Format(time.StampMilli)
			assert.LessOrEqual(c, st.holders, 2, "%s %s: replicas holding it at once, from %s", job, inst, at)
			assert.LessOrEqual(c, st.length(), b.left, "%s %s: held by more than one replica for %v from %s (%d samples)", job, inst, st.length(), at, st.samples)
		}
	}
	inst, l := o.longest()
	t.Logf("%s: copies per series %v (bound %.2f); %d stretches held by more than one replica over %d samples, the longest %v (%s, %d samples, %d replicas; bound %v)",
		job, f, b.mean, stretches, o.samples, l.length().Round(time.Millisecond), inst, l.samples, l.holders, b.left)
}
