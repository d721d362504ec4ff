package aggregate_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
)

// A simulated fleet: replicas, each a store with its aggregator, told who
// holds each agent by claims made as internal/fleet makes them (heard by
// every replica at once), with handovers that wait in flight until they
// are delivered, to the claimant as the fleet routes them, or dropped.
// The agents' own counts are the model: a plain map of what each agent
// exported, run by run, written here and not by the code under test.

const (
	handoverTimeout = 5 * time.Second
	claimInterval   = 2 * time.Second
	simExpiration   = 5 * time.Minute
)

type sim struct {
	t        testing.TB
	replicas []*storetest.Store
	now      int64 // the gateways' clock, also the agents' (one machine)
	agents   map[string]*simAgent
	claims   map[store.ID]*simClaim
	views    map[view]*simView
	byID     map[store.ID]string
	inflight []simHandover
	// last is each replica's group value at the latest check.
	last []float64
	// dropped counts the handovers the scenario dropped.
	dropped int
	// prompt delivers every handover as soon as it is sent, as on a LAN
	// (a few ms); without it they wait for deliver or drop.
	prompt bool
	// tails says that a run ended with its last export on a replica that did
	// not hold the agent: the run's tail since the holder's latest point is
	// counted only if that replica holds the agent again before it expires
	// (a limit of counting under per-request balancing, documented).
	tails int
}

type simAgent struct {
	instance string
	start    int64 // its run's start, agent clock
	value    float64
	// exported is what the agent exported of each run: the value of its
	// latest export per run start, the model of what the fleet must count.
	exported map[int64]float64
	// deltas is what it exported as deltas, in all.
	deltas    float64
	lastDelta int64
	// lastHeld says that its latest export reached the replica that held it.
	lastHeld bool
	// restarts are when it restarted.
	restarts []int64
}

type simClaim struct {
	node  int // replica index, -1 for none
	point int64
}

type view struct {
	replica int
	id      store.ID
}

type simView struct{ newest, lost int64 }

type simHandover struct {
	to, giver int
	answers   int64
	id        store.ID
	payload   []byte
}

func nodeID(replica int) uint64 { return uint64(replica) + 1 }

func newSim(t testing.TB, replicas int) *sim {
	s := &sim{t: t, now: t0.UnixNano(), prompt: true, agents: map[string]*simAgent{}, claims: map[store.ID]*simClaim{},
		views: map[view]*simView{}, byID: map[store.ID]string{}, last: make([]float64, replicas)}
	for r := range replicas {
		cfg := aggregate.Config{
			Fleet: true, HandoverTimeout: handoverTimeout, Expiration: simExpiration,
			Started: s.now,
			Owns:    func(id store.ID) bool { return s.claim(id).node == r },
			Send: func(to uint64, id store.ID, payload []byte, from aggregate.From) bool {
				g := r
				if from.Giver != 0 {
					g = int(from.Giver) - 1
				}
				s.inflight = append(s.inflight, simHandover{to: int(to) - 1, giver: g, answers: from.Answers, id: id, payload: payload})
				return true
			},
		}
		s.replicas = append(s.replicas, storetest.New(t, storetest.Options{
			WithoutScopeInfo: true, Aggregation: cfg,
			Aggregate: []aggregate.RuleConfig{{Metrics: []string{"calls", "dcalls"}, By: []string{"service.name"}}},
		}))
	}
	s.advance(time.Second)
	return s
}

func (s *sim) claim(id store.ID) *simClaim {
	c := s.claims[id]
	if c == nil {
		c = &simClaim{node: -1}
		s.claims[id] = c
	}
	return c
}

func (s *sim) view(r int, id store.ID) *simView {
	v := s.views[view{r, id}]
	if v == nil {
		v = &simView{}
		s.views[view{r, id}] = v
	}
	return v
}

func idOf(instance string) store.ID { return store.IDOf([]byte("api\xff" + instance)) }

// agent returns the agent, started now when new.
func (s *sim) agent(instance string) *simAgent {
	a := s.agents[instance]
	if a == nil {
		a = &simAgent{instance: instance, start: s.now, exported: map[int64]float64{}}
		s.agents[instance] = a
		s.byID[idOf(instance)] = instance
	}
	return a
}

// advance moves every clock on and lets the replicas tick, and makes the
// claims the fleet makes without a batch (claims.due).
func (s *sim) advance(d time.Duration) {
	s.now += int64(d)
	for _, st := range s.replicas {
		st.Advance(time.Duration(s.now - st.Now()))
		st.Agg.Tick(s.now)
	}
	for id, c := range s.claims {
		for r := range s.replicas {
			v := s.view(r, id)
			if r != c.node && c.node >= 0 && v.newest > c.point && v.lost != 0 && s.now-v.lost >= int64(claimInterval) {
				s.claimAs(r, id)
			}
		}
	}
	s.check()
}

// export sends the agent's counter, grown by inc, and a delta of inc to
// replica r.
func (s *sim) export(instance string, r int, inc float64) {
	a := s.agent(instance)
	a.value += inc
	ts := s.now
	a.exported[a.start] = a.value
	b := agentBatch(instance).counter("calls", pt{get, 0, 0}, a.value)
	dp := b.metric("calls").Sum().DataPoints().At(0)
	dp.SetStartTimestamp(nanos(a.start))
	dp.SetTimestamp(nanos(ts))
	if inc > 0 {
		b.delta("dcalls", pt{get, 0, 0}, inc)
		d := b.metric("dcalls").Sum().DataPoints().At(0)
		d.SetStartTimestamp(nanos(max(a.lastDelta, a.start)))
		d.SetTimestamp(nanos(ts))
		a.lastDelta = ts
		a.deltas += inc
	}
	s.replicas[r].Consume(b.md)
	s.received(r, idOf(instance), ts)
	a.lastHeld = s.claim(idOf(instance)).node == r
	for s.prompt && len(s.inflight) > 0 {
		s.deliver(0)
	}
	s.advance(time.Millisecond)
}

// received is the fleet's part of a batch (claims.received).
func (s *sim) received(r int, id store.ID, newest int64) {
	v := s.view(r, id)
	v.newest = max(v.newest, newest)
	c := s.claim(id)
	switch {
	case c.node == r:
		c.point = max(c.point, newest)
	case v.lost != 0 && s.now-v.lost < int64(claimInterval):
		// damped: holds it without claiming
	default:
		s.claimAs(r, id)
	}
}

// claimAs makes replica r claim the agent: it gains it, and every other
// replica hears the claim (claims.heard).
func (s *sim) claimAs(r int, id store.ID) {
	c := s.claim(id)
	prev := c.node
	var expect uint64
	if prev >= 0 {
		expect = nodeID(prev)
	}
	c.node, c.point = r, s.view(r, id).newest
	s.replicas[r].Agg.Gained(id, expect, c.point, s.now)
	for q := range s.replicas {
		if q == r {
			continue
		}
		if v := s.view(q, id); prev == q || v.newest > c.point {
			v.lost = s.now
		}
		s.replicas[q].Agg.Lost(id, nodeID(r), c.point, s.now)
	}
}

// deliver hands the i-th handover in flight to its addressee, which takes
// it if it waits for it (fleet.Node.receiveHandovers).
func (s *sim) deliver(i int) {
	h := s.inflight[i]
	s.inflight = append(s.inflight[:i], s.inflight[i+1:]...)
	s.replicas[h.to].Agg.Receive(h.id, h.payload, aggregate.From{Giver: nodeID(h.giver), Answers: h.answers}, false, s.now)
	s.check()
}

func (s *sim) drop(i int) {
	s.inflight = append(s.inflight[:i], s.inflight[i+1:]...)
	s.dropped++
}

func (s *sim) restart(instance string) {
	a := s.agent(instance)
	if !a.lastHeld && a.value > 0 {
		s.tails++
	}
	// A table keeps the ends of 4 runs while it waits to settle (at most a
	// handover timeout): an agent restarting faster loses the oldest.
	a.restarts = append(a.restarts, s.now)
	if n := len(a.restarts); n > 4 && s.now-a.restarts[n-5] < int64(handoverTimeout+claimInterval) {
		s.tails++
	}
	a.start, a.value, a.lastHeld = s.now, 0, true
}

// groupValue is a replica's aggregate of family.
func (s *sim) groupValue(r int, family string) float64 {
	v, _ := value(s.replicas[r], family, `job="api"`)
	return v
}

// total is the group summed over the replicas, as sum without (instance).
func (s *sim) total(family string) float64 {
	var sum float64
	for r := range s.replicas {
		sum += s.groupValue(r, family)
	}
	return sum
}

// counted is the model: what the agents exported, every run in full.
func (s *sim) counted() (cumulative, deltas float64) {
	for _, a := range s.agents {
		for _, v := range a.exported {
			cumulative += v
		}
		deltas += a.deltas
	}
	return cumulative, deltas
}

// check asserts what holds at every moment: no replica's counter went down,
// and the fleet never counted more than the agents exported.
func (s *sim) check() {
	s.t.Helper()
	for r := range s.replicas {
		v := s.groupValue(r, "calls_total")
		if v < s.last[r] {
			s.t.Fatalf("replica %d's aggregate went down from %v to %v", r, s.last[r], v)
		}
		s.last[r] = v
	}
	cumulative, deltas := s.counted()
	if got := s.total("calls_total"); got > cumulative+1e-9 {
		s.t.Fatalf("the fleet counted %v, the agents exported %v: counted twice", got, cumulative)
	}
	if got := s.total("dcalls_total"); got > deltas+1e-9 {
		s.t.Fatalf("the fleet counted %v deltas, the agents exported %v", got, deltas)
	}
}

// settle lets every handover arrive and every claim be made: the fleet at
// rest, where it must have counted everything the agents exported.
func (s *sim) settle() {
	for range 4 {
		for len(s.inflight) > 0 {
			s.deliver(0)
		}
		s.advance(handoverTimeout + claimInterval)
	}
}

// handovers sums the replicas' handover counts of one outcome.
func (s *sim) handovers(h aggregate.Handover) int64 {
	var n int64
	for _, st := range s.replicas {
		n += st.Agg.Handovers()[h]
	}
	return n
}

func (s *sim) requireExact() {
	s.t.Helper()
	cumulative, deltas := s.counted()
	assert.InDelta(s.t, cumulative, s.total("calls_total"), 1e-9, "counters: the fleet's total is what the agents exported")
	assert.InDelta(s.t, deltas, s.total("dcalls_total"), 1e-9, "deltas")
}

func nanos(ns int64) pcommon.Timestamp { return pcommon.Timestamp(ns) }

func TestFleetStickyAgentsThatMove(t *testing.T) {
	s := newSim(t, 3)
	for i := range 30 {
		for a := range 4 {
			// Each agent stays on a replica for 5 exports, then moves.
			s.export(fmt.Sprint("a", a), (a+i/5)%3, float64(1+(i+a)%4))
			s.advance(time.Second)
		}
	}
	s.settle()
	s.requireExact()
	assert.Positive(t, s.handovers(aggregate.HandoverApplied), "agents moved, with their counts")
	assert.Zero(t, s.handovers(aggregate.HandoverMissed))
}

func TestFleetAgentsBalancedPerRequest(t *testing.T) {
	s := newSim(t, 3)
	for i := range 60 {
		for a := range 3 {
			s.export(fmt.Sprint("a", a), (i*7+a*5)%3, float64(i%3))
		}
		s.advance(300 * time.Millisecond)
	}
	// Their last exports landed wherever the balancer put them.
	s.settle()
	s.requireExact()
}

func TestFleetAgentRestartsAndStops(t *testing.T) {
	s := newSim(t, 2)
	for i := range 10 {
		s.export("a", i/5, 3)
		s.export("b", 0, 1)
		s.advance(time.Second)
	}
	s.restart("a")
	s.export("a", 1, 2)
	s.export("a", 0, 2) // the new run moves too
	// b stops; a stops after one more export on the other replica.
	s.export("a", 1, 1)
	s.settle()
	s.requireExact()
}

func TestFleetHandoverLostCountsLessNeverMore(t *testing.T) {
	s := newSim(t, 2)
	s.prompt = false
	for i := range 6 {
		s.export("a", 0, 5)
		s.advance(time.Second)
		_ = i
	}
	s.export("a", 1, 5) // moves: replica 0 hands its counts to 1...
	require.Len(t, s.inflight, 1)
	s.drop(0) // ...which never arrive
	s.advance(time.Second)
	s.export("a", 1, 5)
	s.advance(handoverTimeout)
	// Replica 1 gave up waiting: it counts from the first point newer than
	// what it has, which replica 0 cannot have counted.
	s.export("a", 1, 5)
	s.export("a", 1, 5)
	s.settle()
	cumulative, _ := s.counted()
	got := s.total("calls_total")
	assert.Equal(t, 50.0, cumulative)
	assert.Equal(t, 35.0, got, "the increments from the last export to 0 to the first after the timeout are lost, counted by neither")
	assert.Equal(t, int64(1), s.handovers(aggregate.HandoverMissed), "and said so")
}

func TestFleetHandoverTimeoutZeroIsTheControl(t *testing.T) {
	// Without waiting for handovers a replica that takes an agent over
	// counts from its first point there: the fleet loses each move's
	// increments. The same run as TestFleetStickyAgentsThatMove.
	s := newSim(t, 3)
	for r, st := range s.replicas {
		*st = *storetest.New(t, storetest.Options{
			WithoutScopeInfo: true,
			Aggregation: aggregate.Config{Fleet: true, Expiration: simExpiration, Started: s.now,
				Owns: func(id store.ID) bool { return s.claim(id).node == r }},
			Aggregate: []aggregate.RuleConfig{{Metrics: []string{"calls", "dcalls"}, By: []string{"service.name"}}},
		})
		st.Advance(time.Duration(s.now - st.Now()))
	}
	for i := range 30 {
		for a := range 4 {
			s.export(fmt.Sprint("a", a), (a+i/5)%3, float64(1+(i+a)%4))
			s.advance(time.Second)
		}
	}
	s.settle()
	cumulative, _ := s.counted()
	assert.Less(t, s.total("calls_total"), cumulative, "not exact without handovers")
}

func TestFleetStoppingReplicaOffersItsAgents(t *testing.T) {
	s := newSim(t, 3)
	for range 5 {
		s.export("a", 0, 2)
		s.advance(time.Second)
	}
	// Replica 0 stops: its agents go to a successor (here 2), which keeps
	// them; the agent comes back on 1.
	for id, c := range s.replicas[0].Agg.Offers() {
		s.replicas[2].Agg.Receive(id, c.Payload, aggregate.From{Giver: nodeID(0)}, true, s.now)
	}
	assert.Equal(t, int64(1), s.handovers(aggregate.HandoverOffered))
	s.export("a", 1, 3)
	s.settle()
	s.requireExact()
}

// FuzzFleet drives the simulated fleet through a random scenario: each byte
// pair an agent (of 4), what it does (export to one of 3 replicas,
// restart, stop) and what the fleet does meanwhile (time passes, a
// handover arrives or is lost). At every step no replica's aggregate goes
// down and the fleet never counts more than the agents exported; at rest,
// without a handover lost, it counts exactly that.
func FuzzFleet(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 2, 1, 3, 2, 0, 0, 0, 40, 1, 41, 2, 80})
	f.Add([]byte{0, 1, 0, 2, 0, 0, 0, 1, 0, 200, 0, 2})
	f.Add([]byte{5, 5, 5, 5, 9, 9, 200, 1, 3, 8})
	f.Fuzz(runFleet)
}

// runFleet runs FuzzFleet's scenario of ops.
func runFleet(t *testing.T, ops []byte) {
	if len(ops) > 400 {
		return
	}
	s := newSim(t, 3)
	s.prompt = false
	stopped := map[string]bool{}
	for i := 0; i+1 < len(ops); i += 2 {
		agent, op := fmt.Sprint("a", ops[i]%4), ops[i+1]
		// What happens is logged: a failure shows the scenario.
		switch {
		case op < 120: // export to a replica
			if !stopped[agent] {
				t.Logf("%s exports +%d to replica %d", agent, op%7, op%3)
				s.export(agent, int(op)%3, float64(op%7))
			}
		case op < 140:
			t.Logf("%s restarts", agent)
			s.restart(agent)
		case op < 150:
			t.Logf("%s stops", agent)
			stopped[agent] = true
		case op < 190:
			t.Logf("%v pass", time.Duration(op-150)*100*time.Millisecond)
			s.advance(time.Duration(op-150) * 100 * time.Millisecond)
		case op < 250:
			if len(s.inflight) > 0 {
				h := s.inflight[int(op)%len(s.inflight)]
				t.Logf("a handover from replica %d to %d arrives", h.giver, h.to)
				s.deliver(int(op) % len(s.inflight))
			}
		default:
			if len(s.inflight) > 0 {
				h := s.inflight[int(op)%len(s.inflight)]
				t.Logf("a handover from replica %d to %d is lost", h.giver, h.to)
				s.drop(int(op) % len(s.inflight))
			}
		}
	}
	s.settle()
	missed := s.handovers(aggregate.HandoverMissed) + s.handovers(aggregate.HandoverLate) + s.handovers(aggregate.HandoverStale)
	if s.dropped == 0 && missed == 0 && s.tails == 0 {
		s.requireExact()
	}
}
