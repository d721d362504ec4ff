package fleet // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/fleet"

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"go.uber.org/zap"
)

// Config is what a node needs besides its callbacks.
type Config struct {
	// Name is the node's memberlist name, unique in the cluster.
	Name string
	// Bind is the host:port gossip listens on (UDP and TCP); Advertise the
	// one other nodes reach it at, empty for memberlist's choice.
	Bind, Advertise string
	// Join lists the peers to join: host:port, a host name standing for
	// every address it resolves to (a Kubernetes headless Service).
	Join []string
	// SecretKey encrypts gossip (AES, 16, 24 or 32 bytes); nil sends it in
	// the clear.
	SecretKey []byte
	// ClaimInterval is the damping interval; Retain how long a resource
	// nobody mentions is remembered; MaxResources bounds them.
	ClaimInterval, Retain time.Duration
	MaxResources          int
	// RejoinInterval is how often a node that is alone joins its peers again.
	RejoinInterval time.Duration
	// Now is the node's clock, unix nanoseconds.
	Now func() int64
	// Depart is called, on memberlist's goroutine, for each resource that
	// leaves this node; it must not block, and returns false when it could
	// not take the departure.
	Depart func(id ID, through int64) bool
	// Claimed, when set, is called on memberlist's goroutine for each claim
	// of another node that is news here (newer than any known, by another
	// node than the latest claimant known): node by now holds the
	// resource, with points up to point.
	Claimed func(id ID, by uint64, point int64)
	// Preceded, when set, is called on memberlist's goroutine when the node
	// hears a claim older than its own latest claim of a resource, which it
	// did not know of when it claimed: node held the resource before it.
	Preceded func(id ID, node uint64)
	// Receive, when set, takes handed-over counts of a resource (Hand), on
	// memberlist's goroutine, and reports whether it did; an offer (keep,
	// from a node that stopped) it must take: nobody else is to have them.
	Receive func(id ID, payload []byte, giver uint64, answers int64, keep bool) bool
	// Gained, when set, is called when the node claims a resource without a
	// batch (after its damping, holding points newer than the latest
	// claim), with the node that made the latest claim before and the
	// claim's point.
	Gained func(id ID, prev uint64, point int64)
}

// Node is this gateway's member of the fleet.
type Node struct {
	cfg    Config
	logger *zap.Logger
	claims *claims
	ml     *memberlist.Memberlist
	queue  *memberlist.TransmitLimitedQueue
	stats  Stats
	log    *logWriter

	handovers chan handover

	stop chan struct{}
	done chan struct{}
	sent chan struct{}
	once sync.Once
}

// Stats are the node's counts since it started.
type Stats struct {
	ClaimsSent, ClaimsDeferred atomic.Int64
	ClaimsHeard                [numHeard]atomic.Int64
	Dropped                    [numDrops]atomic.Int64
	Handovers                  [numHandoverOutcomes]atomic.Int64
}

// claimRetransmitMult multiplies memberlist's retransmits for claims. A
// claim is 37 bytes and sent only when an agent moves; with memberlist's own
// count (4 sends per node in a fleet of up to 9), TestEveryMemberHearsAClaim
// (6 nodes, 5 claims) saw a member miss a claim for over 5 s, until a state
// exchange, in 1 of 25 runs (none in 25 with 3 times as many sends).
const claimRetransmitMult = 3

// Start creates the node, listening at cfg.Bind, and joins its peers in the
// background: a node that finds none (the first of a fleet) runs alone until
// one joins it, or its own rejoin finds one.
func Start(cfg Config, logger *zap.Logger) (*Node, error) {
	id, err := nodeID()
	if err != nil {
		return nil, err
	}
	n := &Node{
		cfg: cfg, logger: logger,
		claims:    newClaims(id, cfg.ClaimInterval, cfg.Retain, cfg.MaxResources),
		handovers: make(chan handover, handoverBacklog),
		stop:      make(chan struct{}), done: make(chan struct{}), sent: make(chan struct{}),
	}
	if n.cfg.Receive == nil {
		n.cfg.Receive = func(ID, []byte, uint64, int64, bool) bool { return true }
	}
	mlc := memberlist.DefaultLANConfig()
	mlc.Name = cfg.Name
	if mlc.BindAddr, mlc.BindPort, err = SplitHostPort(cfg.Bind); err != nil {
		return nil, fmt.Errorf("bind: %w", err)
	}
	mlc.AdvertisePort = mlc.BindPort
	if cfg.Advertise != "" {
		if mlc.AdvertiseAddr, mlc.AdvertisePort, err = SplitHostPort(cfg.Advertise); err != nil {
			return nil, fmt.Errorf("advertise: %w", err)
		}
	}
	mlc.SecretKey = cfg.SecretKey
	mlc.Delegate = (*delegate)(n)
	mlc.Events = (*events)(n)
	n.log = &logWriter{logger: logger, stats: &n.stats}
	mlc.Logger = log.New(n.log, "", 0)
	n.ml, err = memberlist.Create(mlc)
	if err != nil {
		return nil, err
	}
	n.queue = &memberlist.TransmitLimitedQueue{NumNodes: n.ml.NumMembers, RetransmitMult: claimRetransmitMult * mlc.RetransmitMult}
	go n.run()
	go n.send()
	return n, nil
}

// dueEvery is how often a node looks for resources to claim back after
// their damping interval (claims.due).
const dueEvery = time.Second

// nodeID is a random, non-zero ID, new at every start: a restarted gateway
// holds nothing of what it claimed before.
func nodeID() (uint64, error) {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, err
		}
		if id := binary.BigEndian.Uint64(b[:]); id != 0 {
			return id, nil
		}
	}
}

// SplitHostPort splits host:port and checks the port.
func SplitHostPort(hostport string) (string, int, error) {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.ParseUint(p, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("port %q is not a number from 0 to 65535", p)
	}
	return host, int(port), nil
}

// run joins the peers, again whenever the node is alone, and forgets old
// resources.
func (n *Node) run() {
	defer close(n.done)
	n.join()
	tick := time.NewTicker(n.cfg.RejoinInterval)
	defer tick.Stop()
	due := time.NewTicker(dueEvery)
	defer due.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-tick.C:
			if n.ml.NumMembers() == 1 {
				n.join()
			}
			n.claims.forget(n.cfg.Now())
		case <-due.C:
			claims, prev := n.claims.due(n.cfg.Now())
			for i, c := range claims {
				n.claimed(c, prev[i])
			}
		}
	}
}

func (n *Node) join() {
	if len(n.cfg.Join) == 0 {
		return
	}
	joined, err := n.ml.Join(n.cfg.Join)
	if err != nil && joined == 0 {
		n.logger.Info("No fleet peer reached; running alone until one joins", zap.Strings("join", n.cfg.Join), zap.Error(err))
		return
	}
	n.logger.Debug("Joined fleet peers", zap.Int("contacted", joined), zap.Int("members", n.ml.NumMembers()))
}

// Received is called for each batch of a resource with the newest point time
// it held; it claims the resource when the rule says so, and returns what it
// did, with the node that made the latest claim before (0 for none known)
// and the point of its own claim.
func (n *Node) Received(id ID, newest int64) (Received, uint64, int64) {
	c, r, prev := n.claims.received(id, newest, n.cfg.Now())
	switch r {
	case Claimed:
		n.stats.ClaimsSent.Add(1)
		n.queue.QueueBroadcast(&broadcast{id: id, msg: appendMessage(nil, c)})
	case Deferred:
		n.stats.ClaimsDeferred.Add(1)
	}
	return r, prev, c.Point
}

// claimed broadcasts a claim made without a batch (claims.due) and tells
// the caller, as a batch's claim does.
func (n *Node) claimed(c Claim, prev uint64) {
	n.stats.ClaimsSent.Add(1)
	n.queue.QueueBroadcast(&broadcast{id: c.Resource, msg: appendMessage(nil, c)})
	if n.cfg.Gained != nil {
		n.cfg.Gained(c.Resource, prev, c.Point)
	}
}

// Owns reports whether this node made the latest claim of the resource it
// knows of.
func (n *Node) Owns(id ID) bool { return n.claims.latest(id) == n.claims.self }

// hear applies a claim heard from the cluster, and reports what it meant.
func (n *Node) hear(c Claim) Heard {
	h, newClaimant, precedes := n.claims.heardFrom(c, n.cfg.Now())
	if h == Departed && !n.cfg.Depart(c.Resource, c.Point) {
		n.stats.Dropped[DropOverloaded].Add(1)
	}
	switch {
	case newClaimant && n.cfg.Claimed != nil:
		n.cfg.Claimed(c.Resource, c.Node, c.Point)
	case precedes && n.cfg.Preceded != nil:
		n.cfg.Preceded(c.Resource, c.Node)
	}
	return h
}

// relay passes a broadcast claim that was news (newer than any this node
// knew) on, as Serf relays its user events: memberlist sends a broadcast to
// a few random members only (4 sends in a small cluster), so without relays
// a member misses some claims. Stale copies are not relayed, which ends the
// spread. The claim is counted once its relay is queued, so a count seen
// means the relay is in the queue.
func (n *Node) relay(c Claim) {
	h := n.hear(c)
	if h != Stale && h != Own {
		n.queue.QueueBroadcast(&broadcast{id: c.Resource, msg: appendMessage(nil, c)})
	}
	n.stats.ClaimsHeard[h].Add(1)
}

// Members is the number of live members, this node included.
func (n *Node) Members() int { return n.ml.NumMembers() }

// Stats returns the node's counts.
func (n *Node) Stats() *Stats { return &n.stats }

// Queued is the number of claims waiting in the broadcast queue for their
// remaining transmits.
func (n *Node) Queued() int { return n.queue.NumQueued() }

// Resources is the number of resources the node remembers claims of.
func (n *Node) Resources() int { return n.claims.len() }

// Stop leaves the cluster, telling the others at once rather than letting
// them find out, and closes the node's sockets.
func (n *Node) Stop(timeout time.Duration) error {
	var err error
	n.once.Do(func() {
		close(n.stop)
		<-n.done
		<-n.sent
		err = errors.Join(n.ml.Leave(timeout), n.ml.Shutdown())
		n.log.close()
	})
	return err
}

// broadcast is one claim in memberlist's queue; a newer claim of the same
// resource replaces it.
type broadcast struct {
	id  ID
	msg []byte
}

func (b *broadcast) Invalidates(o memberlist.Broadcast) bool {
	ob, ok := o.(*broadcast)
	return ok && ob.id == b.id
}

func (b *broadcast) Message() []byte { return b.msg }
func (b *broadcast) Finished()       {}

// delegate is the node as memberlist's Delegate.
type delegate Node

// NodeMeta is the node's ID, by which handovers find it.
func (d *delegate) NodeMeta(int) []byte { return binary.BigEndian.AppendUint64(nil, d.claims.self) }

// NotifyMsg runs on memberlist's packet goroutine for a claim, where it must
// not block, and on a stream's for a handover.
func (d *delegate) NotifyMsg(b []byte) {
	n := (*Node)(d)
	if len(b) > 0 && (b[0] == handoverKind || b[0] == offerKind) {
		if err := n.receiveHandovers(b); err != nil {
			n.stats.Dropped[DropMalformed].Add(1)
			n.log.emit(func(l *zap.Logger) { l.Debug("Dropped a fleet handover", zap.Error(err)) })
		}
		return
	}
	n.ingest(b, n.relay)
}

func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte {
	return d.queue.GetBroadcasts(overhead, limit)
}

// LocalState is this node's claims, sent in memberlist's state exchange.
func (d *delegate) LocalState(bool) []byte {
	return appendMessage(nil, d.claims.own(d.cfg.Now())...)
}

// MergeRemoteState applies another member's claims; every member exchanges
// its own, so they are not relayed.
func (d *delegate) MergeRemoteState(b []byte, _ bool) {
	(*Node)(d).ingest(b, func(c Claim) { d.stats.ClaimsHeard[(*Node)(d).hear(c)].Add(1) })
}

// ingest applies every claim of a message with apply, or counts the message
// as malformed.
func (n *Node) ingest(b []byte, apply func(Claim)) {
	if err := decodeMessage(b, apply); err != nil {
		n.stats.Dropped[DropMalformed].Add(1)
		n.log.emit(func(l *zap.Logger) { l.Debug("Dropped a fleet message", zap.Error(err)) })
	}
}

// events logs members as they come and go.
type events Node

func (e *events) NotifyJoin(m *memberlist.Node) {
	e.log.emit(func(l *zap.Logger) {
		l.Info("Fleet member joined", zap.String("member", m.Name), zap.String("address", m.Address()))
	})
}

func (e *events) NotifyLeave(m *memberlist.Node) {
	e.log.emit(func(l *zap.Logger) {
		l.Info("Fleet member left", zap.String("member", m.Name), zap.String("address", m.Address()))
	})
}

func (e *events) NotifyUpdate(*memberlist.Node) {}
