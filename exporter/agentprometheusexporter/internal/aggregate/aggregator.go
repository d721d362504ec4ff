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
	// Send queues an agent's counts for node to; false when they could not
	// be queued.
	Send func(to uint64, id store.ID, payload []byte, from From) bool
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
	// relays are the agents this gateway lost while it waited for their
	// previous holder's counts: what it held of them then, to count from
	// those counts when they come, and hand on (Lost).
	relays map[store.ID]*Table
	// lastExpiry is when Tick last expired sources.
	lastExpiry int64

	regMu  sync.Mutex
	groups map[string]*Group

	sources    atomic.Int64
	offerBytes atomic.Int64
	handovers  [numHandovers]atomic.Int64
}

// From says whose counts are handed over, and which claim of the agent they
// answer: a gateway that waits for counts takes only those that answer its
// own claim. Any others are out of date (an earlier holding's, delivered
// late).
type From struct {
	// Giver is the gateway that counted them; 0 for this one.
	Giver uint64
	// Answers is the point time of the claim that ended the giver's
	// holding; 0 for an offer (the giver stopped).
	Answers int64
}

// offer is the counts of an agent that a gateway (giver) which stopped
// handed to this one for whichever gateway holds the agent next.
type offer struct {
	payload []byte
	giver   uint64
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
	return &Aggregator{cfg: cfg, store: st, tables: map[store.ID]*Table{}, offers: map[store.ID]offer{}, gone: map[store.ID]gone{}, relays: map[store.ID]*Table{}, groups: map[string]*Group{}}
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

// lockedTable is the table of an agent, locked, or nil for none.
func (a *Aggregator) lockedTable(id store.ID) *Table {
	a.mu.Lock()
	t := a.tables[id]
	a.mu.Unlock()
	if t != nil {
		t.mu.Lock()
	}
	return t
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
		if o, ok := a.takeOffer(t.id); ok && o.giver == expect {
			if hd, err := decodeHandover(o.payload); err == nil {
				a.handovers[HandoverApplied].Add(1)
				a.settle(t, hd)
				return
			}
		}
		t.settleBy = t.now + int64(a.cfg.HandoverTimeout)
	}
}

// Gained is called when this gateway claimed an agent, with point, that
// expect (0: none known) held before: it counts the agent once it has that
// one's counts.
func (a *Aggregator) Gained(id store.ID, expect uint64, point, now int64) {
	t, _ := a.table(id)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dead || t.owned {
		return
	}
	t.now, t.owned, t.claimPoint = now, true, point
	a.begin(t, expect)
	if t.settled {
		a.noteCounted(t)
	}
}

// Preceded is called when this gateway learns, after it claimed an agent,
// that node held the agent before its claim: if it waits, it no longer
// counts the agent's runs whole should no counts come (they may have been
// counted there), but from its first point after the wait, as when a known
// holder's counts miss.
func (a *Aggregator) Preceded(id store.ID, node uint64) {
	t := a.lockedTable(id)
	if t == nil {
		return
	}
	defer t.mu.Unlock()
	if !t.dead && t.owned && !t.settled && t.expect == 0 {
		t.expect = node
	}
}

// Lost is called when another gateway, to, claimed an agent: what this
// gateway counted of it goes to that one, which counts on from there, and
// its gauges leave their groups. The points this gateway receives of the
// agent from now on wait, uncounted, until it holds the agent again.
func (a *Aggregator) Lost(id store.ID, to uint64, through, now int64) {
	// An offer goes to the claimant, unless it is its giver's claim
	// heard late: the claim the offer stands for.
	if o, ok := a.peekOffer(id); ok && o.giver != to {
		a.takeOffer(id)
		a.hand(to, id, o.payload, From{Giver: o.giver, Answers: through})
	}
	t := a.lockedTable(id)
	if t == nil {
		return
	}
	defer t.mu.Unlock()
	if t.dead {
		return
	}
	t.now = now
	if t.owned && !t.settled && t.expect != 0 {
		// It held the agent, waiting for its previous holder's counts:
		// its points up to the claim are its to count, from those counts,
		// and to hand on; they wait apart until the counts come or time
		// out. Newer ones are the claimant's time, and wait here.
		a.mu.Lock()
		a.relays[id] = t.upTo(through, to)
		a.mu.Unlock()
	}
	if t.owned && !t.settled && t.expect == 0 {
		// Nobody is known to have held the agent before: this gateway
		// counts what it has as it would have at its deadline, and hands
		// that on. (A handover it waits for is passed on to the new
		// claimant by the fleet.)
		a.settle(t, nil)
		a.noteCounted(t)
	}
	if t.owned && t.settled {
		a.hand(to, id, t.encode(), From{Answers: through})
		through = maxTime // everything it counted went with the counts
	}
	a.letGo(t, through)
}

// letGo makes t wait, holding only its points newer than through: this
// gateway may hold the agent again, and count them, before anyone else has.
// Call with t locked.
func (a *Aggregator) letGo(t *Table, through int64) {
	t.owned, t.settled, t.expect = false, false, 0
	t.endedCounters = newerRuns(t.endedCounters, through, func(s counterSlot) int64 { return s.ts })
	t.endedHists = newerRuns(t.endedHists, through, func(s histSlot) int64 { return s.ts })
	t.endedNatives = newerRuns(t.endedNatives, through, func(s nativeSlot) int64 { return s.ts })
	a.leaveGauges(t)
	a.dropCumulative(t, through)
}

const maxTime = int64(^uint64(0) >> 1)

// newerRuns keeps the ended runs whose latest point is newer than through.
func newerRuns[S any](m map[uint64][]S, through int64, ts func(S) int64) map[uint64][]S {
	for key, runs := range m {
		kept := runs[:0]
		for _, r := range runs {
			if ts(r) > through {
				kept = append(kept, r)
			}
		}
		if len(kept) == 0 {
			delete(m, key)
		} else {
			m[key] = kept
		}
	}
	return m
}

// hand queues counts for the gateway to, counting the outcome. Without
// handovers it does nothing.
func (a *Aggregator) hand(to uint64, id store.ID, payload []byte, from From) {
	switch {
	case a.cfg.Send == nil:
	case to != 0 && a.cfg.Send(to, id, payload, from):
		a.handovers[HandoverSent].Add(1)
	default:
		a.handovers[HandoverUnsent].Add(1)
	}
}

// Receive applies counts of an agent handed over: this gateway counts on
// from them if it holds the agent and waits for them (they answer its
// claim); if it lost the agent
// while it waited for them, it counts its own time as holder from them and
// hands the result on to the agent's new holder. Counts it does not wait
// for are out of date: it drops them (stale). It reports whether it took
// them; an offer (keep) it keeps for when it holds the agent.
func (a *Aggregator) Receive(id store.ID, payload []byte, from From, keep bool, now int64) bool {
	hd, err := decodeHandover(payload)
	if err != nil {
		a.handovers[HandoverMalformed].Add(1)
		return true
	}
	a.mu.Lock()
	t, relay := a.tables[id], a.relays[id]
	if relay != nil && relay.awaits(from) {
		delete(a.relays, id)
	} else {
		relay = nil
	}
	a.mu.Unlock()
	if relay != nil {
		// Only this call holds relay now: no lock needed.
		relay.now = now
		a.handovers[HandoverApplied].Add(1)
		a.settle(relay, hd)
		a.noteCounted(relay)
		a.hand(relay.relay, id, relay.encode(), From{Answers: relay.relayPoint})
		return true
	}
	if t != nil && a.apply(t, hd, from, keep, now) {
		return true
	}
	if !keep {
		return false
	}
	a.keepOffer(id, payload, from.Giver, now)
	return true
}

// apply settles t with handed counts when it waits for them; an offer
// (from a gateway that stopped) when t waits for its giver's.
func (a *Aggregator) apply(t *Table, hd *handed, from From, offer bool, now int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.dead || offer && !(t.owned && !t.settled && t.expect == from.Giver):
		return false
	case t.owned && t.settled:
		a.handovers[HandoverLate].Add(1)
		return true
	case t.owned && !offer && !t.awaits(from):
		a.handovers[HandoverStale].Add(1)
		return true
	case t.owned:
		t.now = now
		a.handovers[HandoverApplied].Add(1)
		a.settle(t, hd)
		a.noteCounted(t)
		return true
	}
	return false
}

// Counts are an agent's counts on their way, and the gateway that counted
// them (0: this one).
type Counts struct {
	Payload []byte
	Giver   uint64
}

// Offers returns the counts of every agent this gateway holds, and the
// offers it keeps, to hand to the gateways that will hold the agents: a
// gateway that stops calls it last.
func (a *Aggregator) Offers() map[store.ID]Counts {
	a.mu.Lock()
	tables := make([]*Table, 0, len(a.tables))
	for _, t := range a.tables {
		tables = append(tables, t)
	}
	out := make(map[store.ID]Counts, len(a.offers))
	for id, o := range a.offers {
		out[id] = Counts{Payload: o.payload, Giver: o.giver}
	}
	a.mu.Unlock()
	for _, t := range tables {
		t.mu.Lock()
		if !t.dead && t.counting() {
			out[t.id] = Counts{Payload: t.encode()}
		}
		t.mu.Unlock()
	}
	return out
}

func (a *Aggregator) keepOffer(id store.ID, payload []byte, giver uint64, now int64) {
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
	a.offers[id] = offer{payload: payload, giver: giver, at: now}
	a.handovers[HandoverOffered].Add(1)
}

func (a *Aggregator) peekOffer(id store.ID) (offer, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	o, ok := a.offers[id]
	return o, ok
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
	for id, r := range a.relays {
		if now >= r.settleBy {
			// The counts it was to count from never came: neither it nor
			// the new holder counts its time as holder.
			delete(a.relays, id)
			a.handovers[HandoverMissed].Add(1)
		}
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
		t.endedCounters, t.endedHists, t.endedNatives = nil, nil, nil
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
