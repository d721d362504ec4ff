package fleet // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/fleet"

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// claims is what one node knows of the claims of each resource: the rule of
// the package doc, with the node's clock passed in.
type claims struct {
	self     uint64
	interval int64 // the damping interval, nanoseconds
	retain   int64 // how long a resource nobody mentions is remembered
	max      int   // bound on the resources remembered

	mu      sync.Mutex
	entries map[ID]*entry
}

type entry struct {
	newest int64 // newest point received here, 0 for none
	// The latest claim known: its point time and node (0 for none), and
	// when, on this node's clock, it was made or heard.
	point int64
	node  uint64
	heard int64
	// lost is when this node, holding the resource, last heard another's
	// newer claim of it (0: never): the damping runs from then.
	lost int64
	// touched is when the resource was last received or claimed.
	touched int64
}

func newClaims(self uint64, interval, retain time.Duration, max int) *claims {
	return &claims{self: self, interval: int64(interval), retain: int64(retain), max: max, entries: map[ID]*entry{}}
}

// Received is what receiving a resource led to.
type Received uint8

const (
	// Held: this node made the latest claim; nothing to say.
	Held Received = iota
	// Claimed: the caller broadcasts the claim returned with it.
	Claimed
	// Deferred: this node gave the resource up less than the damping
	// interval ago; it holds it without claiming it back yet.
	Deferred
)

// received records that the resource's points up to newest arrived at now,
// and returns the claim to broadcast when there is one, with the node that
// made the latest claim before it (0 for none known).
func (c *claims) received(id ID, newest, now int64) (cl Claim, r Received, prev uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[id]
	if e == nil {
		e = &entry{}
		c.entries[id] = e
	}
	e.newest, e.touched = max(e.newest, newest), now
	switch {
	case e.node == c.self:
		// The claim keeps its point: a claim another node makes meanwhile,
		// of its newest point, orders after it, and this node lets go when
		// it hears it, however new what it holds (KeptNewer). Were the
		// point to grow with what this node receives, such a claim could
		// be stale here and current there: both would hold the agent, and
		// count it twice (internal/aggregate).
		return Claim{}, Held, 0
	case e.lost != 0 && now-e.lost < c.interval:
		return Claim{}, Deferred, 0
	}
	prev = e.node
	e.point, e.node, e.heard = e.newest, c.self, now
	return Claim{Resource: id, Point: e.point, Node: c.self}, Claimed, prev
}

// due claims, at now, the resources this node gave up more than the damping
// interval ago and has received newer points of since: with per-request
// balancing, an agent's last exports may reach only this node, and nobody
// would hold them. It returns the claims to broadcast, each with the node
// that made the latest claim before it.
func (c *claims) due(now int64) (out []Claim, prev []uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, e := range c.entries {
		if e.node != c.self && e.node != 0 && e.newest > e.point && e.lost != 0 && now-e.lost >= c.interval {
			prev = append(prev, e.node)
			e.point, e.node, e.heard = e.newest, c.self, now
			out = append(out, Claim{Resource: id, Point: e.point, Node: c.self})
		}
	}
	return out, prev
}

// latest is the node that made the latest claim of the resource known here,
// 0 for none.
func (c *claims) latest(id ID) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[id]; e != nil {
		return e.node
	}
	return 0
}

// Heard is what hearing another node's claim led to.
type Heard uint8

const (
	// Departed: the resource leaves this node; the caller removes its
	// series not newer than the claim's point.
	Departed Heard = iota
	// KeptNewer: the claim is the latest, but this node holds a newer point
	// of the resource (it received it meanwhile, without claiming it yet).
	KeptNewer
	// NotHeld: the claim is recorded; the resource is not held here (never
	// received, or let go at an earlier claim).
	NotHeld
	// Stale: a claim as new as it, or newer, is known; nothing changes.
	Stale
	// Own: a claim in this node's name, such as its own coming back through
	// a state exchange; a claim is this node's only if it made it.
	Own
	numHeard
)

var heardNames = [numHeard]string{"departed", "kept_newer", "not_held", "stale", "own"}

func (h Heard) String() string { return heardNames[h] }

// heard records a claim heard at now and says what it means here.
func (c *claims) heard(cl Claim, now int64) Heard {
	h, _, _ := c.heardFrom(cl, now)
	return h
}

// heardFrom is heard, and says whether the claim is of another node than
// the latest claimant known (a state exchange repeats a claimant's claim
// with its newest point), and whether it is an older claim of another node
// than this one's latest: another node held the resource before this one's
// claim, which gossip had not brought here when it claimed.
func (c *claims) heardFrom(cl Claim, now int64) (h Heard, newClaimant, precedes bool) {
	if cl.Node == c.self {
		return Own, false, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[cl.Resource]
	if e != nil && !cl.newer(e.point, e.node) {
		return Stale, false, e.node == c.self && cl.Point < e.point
	}
	if e == nil {
		if len(c.entries) >= c.max {
			return NotHeld, true, false // remembered only when there is room
		}
		e = &entry{}
		c.entries[cl.Resource] = e
	}
	newClaimant = e.node != cl.Node
	// Held here: this node made the latest claim, or received the resource
	// since it: a node that let it go before holds nothing to give up.
	held := e.node == c.self || e.newest > e.point
	claimant := e.node
	e.point, e.node, e.heard = cl.Point, cl.Node, now-int64(cl.Age)
	e.touched = max(e.touched, e.heard)
	switch {
	case !held:
		return NotHeld, newClaimant, false
	case e.newest > cl.Point:
		// A claim of another node than the latest claimant is a hand-over
		// this node goes along with; the same claimant's again (a state
		// exchange carries its newest point) is no news to damp by.
		if cl.Node != claimant {
			e.lost = now
		}
		return KeptNewer, newClaimant, false
	}
	e.lost = now
	return Departed, newClaimant, false
}

// maxStateClaims bounds the claims a state exchange carries (37 bytes each,
// ~3.7 MB): memberlist refuses a state above 20 MB. The youngest go: an old
// claim has been heard already, unless a partition hid it.
const maxStateClaims = 100_000

// own returns the claims this node made and still holds, with their ages at
// now, the youngest maxStateClaims of them.
func (c *claims) own(now int64) []Claim {
	c.mu.Lock()
	var out []Claim
	for id, e := range c.entries {
		if e.node == c.self {
			out = append(out, Claim{Resource: id, Point: e.point, Node: c.self, Age: time.Duration(now - e.heard)})
		}
	}
	c.mu.Unlock()
	if len(out) > maxStateClaims {
		slices.SortFunc(out, func(a, b Claim) int { return cmp.Compare(a.Age, b.Age) })
		out = out[:maxStateClaims]
	}
	return out
}

// forget drops the resources neither received nor claimed for the retention
// time: a resource gone that long holds no series anywhere.
func (c *claims) forget(now int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, e := range c.entries {
		if now-e.touched > c.retain {
			delete(c.entries, id)
		}
	}
}

// len is the number of resources remembered.
func (c *claims) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
