package aggregate // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// Config is what an Aggregator needs besides its store.
type Config struct {
	Rules *Rules
	// MaxSources bounds the sources held in all, MaxSourcesPerTable those
	// of one agent; a new source beyond either is refused.
	MaxSources, MaxSourcesPerTable int
	// Expiration removes a source whose latest point is this much older than
	// its agent's newest, and an agent not heard of for this long.
	Expiration time.Duration
	// Fleet says that the gateway is one of a fleet: an agent it begins to
	// hold may have been held by another gateway, whose counts it waits for
	// up to HandoverTimeout (0: it never waits, and counts from its own
	// first points).
	Fleet           bool
	HandoverTimeout time.Duration
	// Started is the gateway clock when this gateway began counting: the
	// run of an agent nobody held before counts from zero only if it began
	// since; an older run counts from its first point here.
	Started int64
	// Owns reports whether this gateway made the latest claim of the agent
	// it knows of (fleet only).
	Owns func(store.ID) bool
	// Send queues an agent's counts for node to; false when they could not be.
	Send func(to uint64, id store.ID, payload []byte) bool
}

// Aggregator sums the sources of each group, as the package doc says.
type Aggregator struct {
	cfg   Config
	store *store.Store

	mu     sync.Mutex
	tables map[store.ID]*Table
	offers map[store.ID]offer
	// gone remembers the agents whose tables expired: the newest point
	// time seen of each, and when it went (gateway clock).
	gone map[store.ID]gone
	// lastExpiry is when Tick last expired sources.
	lastExpiry int64

	regMu  sync.Mutex
	groups map[string]*Group

	sources    atomic.Int64
	offerBytes atomic.Int64
	handovers  [numHandovers]atomic.Int64
}

// offer is the counts of an agent that a gateway which stopped handed to
// this one for whichever gateway holds the agent next.
type offer struct {
	payload []byte
	at      int64
}

// maxOfferBytes bounds the offers kept; one more is counted as missed.
const maxOfferBytes = 64 << 20

// gone is an agent whose table expired: a run of it that began before its
// newest point then may have been counted here already.
type gone struct{ newest, at int64 }

// goneFor is how long, in expirations, an expired agent is remembered.
const goneFor = 10

// New returns an aggregator writing its groups into st.
func New(cfg Config, st *store.Store) *Aggregator {
	if cfg.Owns == nil {
		cfg.Owns = func(store.ID) bool { return true }
	}
	if cfg.Send == nil {
		cfg.Send = func(uint64, store.ID, []byte) bool { return false }
	}
	return &Aggregator{cfg: cfg, store: st, tables: map[store.ID]*Table{}, offers: map[store.ID]offer{}, gone: map[store.ID]gone{}, groups: map[string]*Group{}}
}

// Rules are the aggregator's rules.
func (a *Aggregator) Rules() *Rules { return a.cfg.Rules }

func (a *Aggregator) reserve() bool {
	if a.sources.Add(1) > int64(a.cfg.MaxSources) {
		a.sources.Add(-1)
		return false
	}
	return true
}

func (a *Aggregator) release(n int) { a.sources.Add(-int64(n)) }

// ResourceKey is the store key of a rule's groups: a resource of their own,
// which no agent's key (job, 0xff, instance, valid UTF-8 otherwise) can be.
func ResourceKey(r *Rule) []byte { return []byte{0xff, 0xff, byte(r.Index >> 8), byte(r.Index)} }

// Group returns the group of a new source of rule, whose labels are l in the
// family open in w: the one that has them, or a new one with its series. It
// returns nil with the store's outcome when the series is refused, or with
// mismatch when the group holds another kind (a classic histogram group
// and an exponential source). The group counts the source.
func (a *Aggregator) Group(w *store.Writer, rule *Rule, kind Kind, bounds *store.Bounds, l *store.Labels, now int64) (g *Group, outcome store.Outcome, mismatch bool) {
	s, outcome := w.Put(l)
	if s == nil {
		return nil, outcome, false
	}
	f := w.Family()
	key := f.Name + "\xff" + s.Labels.Text()
	a.regMu.Lock()
	defer a.regMu.Unlock()
	if g = a.groups[key]; g != nil {
		if g.kind != kind {
			return nil, outcome, true
		}
		if g.series != s {
			g.adopt(s, outcome, now)
		}
		g.sources.Add(1)
		return g, outcome, false
	}
	g = &Group{a: a, rule: rule, kind: kind, name: f.Name, help: f.Help, unit: f.Unit, storeKind: f.Kind, key: key, labels: s.Labels, bounds: bounds}
	g.adopt(s, outcome, now)
	g.sources.Add(1)
	a.groups[key] = g
	return g, outcome, false
}

// unref drops a source from its group; a group without any leaves the
// registry, its series staying until it expires.
func (a *Aggregator) unref(g *Group) {
	a.regMu.Lock()
	defer a.regMu.Unlock()
	if g.sources.Add(-1) == 0 && a.groups[g.key] == g {
		delete(a.groups, g.key)
	}
}

// Open returns the table of a resource, locked, for a batch at now (gateway
// clock). Close it after the batch. A resource that is not one agent (no
// job or no instance) is never claimed in a fleet: each gateway counts what
// it receives of it.
func (a *Aggregator) Open(id store.ID, agent bool, now int64) *Table {
	for {
		t, created := a.table(id)
		t.mu.Lock()
		if t.dead {
			t.mu.Unlock()
			continue
		}
		t.now, t.updated = now, now
		if created && (!a.cfg.Fleet || !agent || a.cfg.Owns(id)) {
			t.owned = true
			a.begin(t, 0)
		}
		return t
	}
}

// table finds or creates the table of an agent.
func (a *Aggregator) table(id store.ID) (t *Table, created bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t = a.tables[id]; t == nil {
		t = &Table{a: a, id: id, seen: a.gone[id].newest}
		delete(a.gone, id)
		a.tables[id] = t
		created = true
	}
	return t, created
}

// Close settles a table whose time came and unlocks it.
func (a *Aggregator) Close(t *Table) {
	if t.owned && !t.settled && t.now >= t.settleBy {
		a.settle(t, nil)
	}
	a.noteCounted(t)
	t.mu.Unlock()
}

// noteCounted tells the store that the table's groups took increments,
// which exist nowhere else until every scraper has them.
func (a *Aggregator) noteCounted(t *Table) {
	if t.counted {
		a.store.NoteDeltas(t.now, false)
		t.counted = false
	}
}

// begin starts counting t, which this gateway now holds: at once when it
// keeps the agent's counts already (offered), when alone, or when it does
// not wait for handovers; else once the previous holder's counts arrive or
// the handover timeout passes. Call with t locked.
func (a *Aggregator) begin(t *Table, expect uint64) {
	t.settled, t.expect = false, expect
	t.settleBy = t.now
	if a.cfg.Fleet {
		if o, ok := a.takeOffer(t.id); ok {
			if hd, err := decodeHandover(o.payload); err == nil {
				a.handovers[HandoverApplied].Add(1)
				a.settle(t, hd)
				return
			}
		}
		t.settleBy = t.now + int64(a.cfg.HandoverTimeout)
	}
}

// Gained is called when this gateway claimed an agent that expect (0: none
// known) held before: it counts the agent once it has that one's counts.
func (a *Aggregator) Gained(id store.ID, expect uint64, now int64) {
	t, _ := a.table(id)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dead || t.owned {
		return
	}
	t.now, t.owned = now, true
	a.begin(t, expect)
	if t.settled {
		a.noteCounted(t)
	}
}

// Lost is called when another gateway, to, claimed an agent: what this
// gateway counted of it goes to that one, which counts on from there, and
// its gauges leave their groups. The points this gateway receives of the
// agent from now on wait, uncounted, until it holds the agent again.
func (a *Aggregator) Lost(id store.ID, to uint64, through, now int64) {
	if o, ok := a.takeOffer(id); ok {
		a.hand(to, id, o.payload)
	}
	a.mu.Lock()
	t := a.tables[id]
	a.mu.Unlock()
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dead {
		return
	}
	t.now = now
	if t.owned && !t.settled && t.expect == 0 {
		// Nobody is known to have held the agent before: this gateway
		// counts what it has as it would have at its deadline, and hands
		// that on. (A handover it waits for is passed on to the new
		// claimant by the fleet.)
		a.settle(t, nil)
		a.noteCounted(t)
	}
	if t.owned && t.settled {
		a.hand(to, id, t.encode())
		through = maxTime // everything it counted went with the counts
	}
	t.owned, t.settled, t.expect = false, false, 0
	a.leaveGauges(t)
	// Points newer than the claim's wait: this gateway may hold the agent
	// again, and count them, before anyone else has.
	a.dropCumulative(t, through)
}

const maxTime = int64(^uint64(0) >> 1)

// hand queues counts for the gateway to, counting the outcome.
func (a *Aggregator) hand(to uint64, id store.ID, payload []byte) {
	if to != 0 && a.cfg.Send(to, id, payload) {
		a.handovers[HandoverSent].Add(1)
	} else {
		a.handovers[HandoverUnsent].Add(1)
	}
}

// Receive applies counts handed over for an agent: this gateway counts on
// from them if it holds the agent and waits for them; it keeps them for
// later if it does not hold the agent (yet).
func (a *Aggregator) Receive(id store.ID, payload []byte, now int64) {
	hd, err := decodeHandover(payload)
	if err != nil {
		a.handovers[HandoverMalformed].Add(1)
		return
	}
	a.mu.Lock()
	t := a.tables[id]
	a.mu.Unlock()
	if t != nil {
		t.mu.Lock()
		defer t.mu.Unlock()
		if !t.dead && t.owned {
			if t.settled {
				a.handovers[HandoverLate].Add(1)
				return
			}
			t.now = now
			a.handovers[HandoverApplied].Add(1)
			a.settle(t, hd)
			a.noteCounted(t)
			return
		}
	}
	a.keepOffer(id, payload, now)
}

// Offers returns the counts of every agent this gateway holds, to hand to
// the gateways that will hold them: a gateway that stops calls it last.
func (a *Aggregator) Offers() map[store.ID][]byte {
	a.mu.Lock()
	tables := make([]*Table, 0, len(a.tables))
	for _, t := range a.tables {
		tables = append(tables, t)
	}
	out := make(map[store.ID][]byte, len(a.offers))
	for id, o := range a.offers {
		out[id] = o.payload
	}
	a.mu.Unlock()
	for _, t := range tables {
		t.mu.Lock()
		if !t.dead && t.counting() {
			out[t.id] = t.encode()
		}
		t.mu.Unlock()
	}
	return out
}

func (a *Aggregator) keepOffer(id store.ID, payload []byte, now int64) {
	if a.offerBytes.Add(int64(len(payload))) > maxOfferBytes {
		a.offerBytes.Add(-int64(len(payload)))
		a.handovers[HandoverMissed].Add(1)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.offers[id]; ok {
		a.offerBytes.Add(-int64(len(old.payload)))
	}
	a.offers[id] = offer{payload: payload, at: now}
	a.handovers[HandoverOffered].Add(1)
}

func (a *Aggregator) takeOffer(id store.ID) (offer, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	o, ok := a.offers[id]
	if ok {
		delete(a.offers, id)
		a.offerBytes.Add(-int64(len(o.payload)))
	}
	return o, ok
}

// Tick settles the tables whose handover timed out and, every quarter of
// the expiration, expires sources, agents and offers. now is the gateway clock.
func (a *Aggregator) Tick(now int64) {
	expire := now-a.lastExpiry >= int64(a.cfg.Expiration)/4
	if expire {
		a.lastExpiry = now
	}
	a.mu.Lock()
	tables := make([]*Table, 0, len(a.tables))
	for _, t := range a.tables {
		tables = append(tables, t)
	}
	if expire {
		for id, g := range a.gone {
			if now-g.at > goneFor*int64(a.cfg.Expiration) {
				delete(a.gone, id)
			}
		}
		for id, o := range a.offers {
			if now-o.at > int64(a.cfg.Expiration) {
				delete(a.offers, id)
				a.offerBytes.Add(-int64(len(o.payload)))
				a.handovers[HandoverMissed].Add(1)
			}
		}
	}
	a.mu.Unlock()
	for _, t := range tables {
		t.mu.Lock()
		t.now = now
		if t.owned && !t.settled && now >= t.settleBy {
			a.settle(t, nil)
			a.noteCounted(t)
		}
		if expire {
			a.expire(t, now)
		}
		t.mu.Unlock()
	}
	if expire {
		a.resumGauges(now)
	}
}

// expire removes an agent's sources whose latest point is Expiration older
// than its newest, and the whole agent when no batch came for Expiration.
// Call with t locked.
func (a *Aggregator) expire(t *Table, now int64) {
	exp := int64(a.cfg.Expiration)
	if now-t.updated > exp {
		a.leaveGauges(t)
		a.dropCumulative(t, maxTime)
		t.deltas.each(func(_ uint64, sl *deltaSlot) bool { t.forget(sl.g); return false })
		t.gauges.each(func(_ uint64, sl *gaugeSlot) bool { t.forget(sl.g); return false })
		t.dead = true
		a.mu.Lock()
		if a.tables[t.id] == t {
			delete(a.tables, t.id)
			if len(a.gone) < a.cfg.MaxSources {
				a.gone[t.id] = gone{newest: max(t.newest, t.seen), at: now}
			}
		}
		a.mu.Unlock()
		return
	}
	cutoff := t.newest - exp
	t.counters.each(func(_ uint64, sl *counterSlot) bool { return a.keep(t, cutoff, sl.ts, sl.g) })
	t.hists.each(func(_ uint64, sl *histSlot) bool { return a.keep(t, cutoff, sl.ts, sl.g) })
	t.natives.each(func(_ uint64, sl *nativeSlot) bool { return a.keep(t, cutoff, sl.ts, sl.g) })
	t.deltas.each(func(_ uint64, sl *deltaSlot) bool { return a.keep(t, cutoff, sl.ts, sl.g) })
	t.gauges.each(func(_ uint64, sl *gaugeSlot) bool {
		if sl.ts >= cutoff {
			return true
		}
		if sl.member >= 0 {
			a.write(sl.g, now, func(w *store.Writer) { sl.g.leave(w, sl.member, now) })
		}
		t.forget(sl.g)
		return false
	})
}

// keep reports whether a source's latest point, at ts, is not older than
// cutoff; it forgets one that is.
func (a *Aggregator) keep(t *Table, cutoff, ts int64, g *Group) bool {
	if ts >= cutoff {
		return true
	}
	t.forget(g)
	return false
}

// leaveGauges takes every gauge of t out of its group. Call with t locked.
func (a *Aggregator) leaveGauges(t *Table) {
	t.gauges.each(func(_ uint64, sl *gaugeSlot) bool {
		if sl.member >= 0 {
			a.write(sl.g, t.now, func(w *store.Writer) { sl.g.leave(w, sl.member, t.now) })
			sl.member = -1
		}
		return true
	})
}

// dropCumulative forgets t's cumulative sources not newer than through:
// what they counted stays in their groups. Call with t locked.
func (a *Aggregator) dropCumulative(t *Table, through int64) {
	newer := func(ts int64, g *Group) bool {
		if ts > through {
			return true
		}
		t.forget(g)
		return false
	}
	t.counters.each(func(_ uint64, sl *counterSlot) bool { return newer(sl.ts, sl.g) })
	t.hists.each(func(_ uint64, sl *histSlot) bool { return newer(sl.ts, sl.g) })
	t.natives.each(func(_ uint64, sl *nativeSlot) bool { return newer(sl.ts, sl.g) })
}

// resumGauges adds every gauge group's members up again.
func (a *Aggregator) resumGauges(now int64) {
	a.regMu.Lock()
	var gauges []*Group
	for _, g := range a.groups {
		if g.kind == KindGauge && g.rule.Gauge == GaugeSum {
			gauges = append(gauges, g)
		}
	}
	a.regMu.Unlock()
	for _, g := range gauges {
		a.write(g, now, func(w *store.Writer) {
			g.resum()
			if len(g.values) > len(g.free) {
				g.writeGauge(w, now)
			}
		})
	}
}

// write opens g's family and runs fn with it, outside a batch.
func (a *Aggregator) write(g *Group, now int64, fn func(w *store.Writer)) {
	var w store.Writer
	if !a.store.Write(&w, g.name, g.storeKind, g.help, g.unit, a.store.Resource(ResourceKey(g.rule), now), now) {
		return
	}
	fn(&w)
	w.Close()
}

// Sources is the number of sources held.
func (a *Aggregator) Sources() int64 { return a.sources.Load() }

// Groups is the number of groups that have sources.
func (a *Aggregator) Groups() int {
	a.regMu.Lock()
	defer a.regMu.Unlock()
	return len(a.groups)
}

// Handovers returns the count of handovers by outcome.
func (a *Aggregator) Handovers() [numHandovers]int64 {
	var out [numHandovers]int64
	for i := range out {
		out[i] = a.handovers[i].Load()
	}
	return out
}
