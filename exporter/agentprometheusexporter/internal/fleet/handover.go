package fleet // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/fleet"

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/hashicorp/memberlist"
	"go.uber.org/zap"
)

// A handover carries what a gateway counted of agents' aggregated series
// (internal/aggregate) to the gateway that holds them next, over
// memberlist's reliable channel (TCP): a claim is gossip that may be heard
// late, a handover a message that arrives whole or not at all.
//
// A handover message is the kind byte (a handover to the claimant, or an
// offer to a successor of a node that stops), then any number of entries:
// the resource ID, the node that counted and the point of the claim that
// its counts answer (8 bytes each, big-endian), the length of the counts
// (uvarint) and the counts, which this package does not read.
//
// A handover goes to the node that claimed the resource, and nowhere else:
// if that node no longer waits for it (it gave up waiting, or the giver
// holds the resource again), it is out of date, and passing it on to a
// newer claimant would count its giver's older counts as its newer ones.
// A claimant that lost the resource while it waited passes on the result
// of its own counting instead (internal/aggregate, relay).
const (
	handoverKind = 2
	offerKind    = 3
	// maxHandoverBytes keeps a message under memberlist's limit of 20 MiB.
	maxHandoverBytes = 16 << 20
	// handoverBacklog bounds the handovers waiting to be sent.
	handoverBacklog = 4096
)

// handover is one agent's counts on its way.
type handover struct {
	to       uint64
	resource ID
	giver    uint64
	answers  int64
	payload  []byte
	offer    bool
}

// Hand queues the counts of a resource, counted by node giver (0: this
// node) and answering the claim of point answers, for node to; false when
// the backlog is full.
func (n *Node) Hand(to uint64, id ID, payload []byte, giver uint64, answers int64) bool {
	if giver == 0 {
		giver = n.claims.self
	}
	return n.queueHandover(handover{to: to, resource: id, giver: giver, answers: answers, payload: payload})
}

func (n *Node) queueHandover(h handover) bool {
	select {
	case n.handovers <- h:
		return true
	default:
		return false
	}
}

// send delivers the queued handovers until stop, a message per node.
func (n *Node) send() {
	defer close(n.sent)
	for {
		select {
		case <-n.stop:
			return
		case h := <-n.handovers:
			batch := map[uint64][]handover{h.to: {h}}
			for more := true; more; {
				select {
				case h := <-n.handovers:
					batch[h.to] = append(batch[h.to], h)
				default:
					more = false
				}
			}
			for to, hs := range batch {
				n.deliver(to, hs)
			}
		}
	}
}

// deliver sends handovers to node to, in messages under the size limit.
func (n *Node) deliver(to uint64, hs []handover) {
	member := n.member(to)
	for len(hs) > 0 {
		kind := byte(handoverKind)
		if hs[0].offer {
			kind = offerKind
		}
		msg := []byte{kind}
		sent := 0
		for _, h := range hs {
			if sent > 0 && (len(msg)+len(h.payload)+48 > maxHandoverBytes || h.offer != hs[0].offer) {
				break
			}
			msg = appendHandover(msg, h)
			sent++
		}
		hs = hs[sent:]
		if member == nil || len(msg) > maxHandoverBytes {
			n.stats.Handovers[HandoverUnrouted].Add(int64(sent))
			continue
		}
		if err := n.ml.SendReliable(member, msg); err != nil {
			n.stats.Handovers[HandoverUnrouted].Add(int64(sent))
			n.log.emit(func(l *zap.Logger) {
				l.Debug("Could not hand counts over", zap.String("member", member.Name), zap.Error(err))
			})
		}
	}
}

func appendHandover(b []byte, h handover) []byte {
	b = append(b, h.resource[:]...)
	b = binary.BigEndian.AppendUint64(b, h.giver)
	b = binary.BigEndian.AppendUint64(b, uint64(h.answers))
	b = binary.AppendUvarint(b, uint64(len(h.payload)))
	return append(b, h.payload...)
}

// member is the live member with this node ID (its meta), nil for none.
func (n *Node) member(id uint64) *memberlist.Node {
	for _, m := range n.ml.Members() {
		if len(m.Meta) == 8 && binary.BigEndian.Uint64(m.Meta) == id {
			return m
		}
	}
	return nil
}

// receiveHandovers gives each entry of a handover message to this node's
// aggregator, which takes it when it waits for it: else it is dropped. An
// offer is kept, for whoever claims the resource next.
func (n *Node) receiveHandovers(b []byte) error {
	if len(b) < 1 {
		return fmt.Errorf("%w: an empty handover", errMalformed)
	}
	offer := b[0] == offerKind
	var entries []handover
	const head = 16 + 8 + 8
	for rest := b[1:]; len(rest) > 0; {
		if len(rest) < head {
			return fmt.Errorf("%w: a handover entry of %d bytes", errMalformed, len(rest))
		}
		var h handover
		copy(h.resource[:], rest[:16])
		h.giver = binary.BigEndian.Uint64(rest[16:24])
		h.answers = int64(binary.BigEndian.Uint64(rest[24:32]))
		size, k := binary.Uvarint(rest[head:])
		if k <= 0 || size > uint64(len(rest)-head-k) {
			return fmt.Errorf("%w: a handover entry's length", errMalformed)
		}
		h.payload = rest[head+k : head+k+int(size)]
		entries = append(entries, h)
		rest = rest[head+k+int(size):]
	}
	for _, h := range entries {
		if !n.cfg.Receive(h.resource, h.payload, h.giver, h.answers, offer) {
			n.stats.Handovers[HandoverUnwanted].Add(1)
		}
	}
	return nil
}

// Counts are a resource's counts, and the node that counted them (0: this
// one).
type Counts struct {
	Payload []byte
	Giver   uint64
}

// Offer hands the counts of the resources this node holds, when it stops,
// each to a successor chosen among the live members by rendezvous hashing:
// the successor keeps them until the resource is claimed. It waits for the
// messages to go, at most timeout.
func (n *Node) Offer(counts map[ID]Counts, timeout time.Duration) {
	var members []*memberlist.Node
	for _, m := range n.ml.Members() {
		if m.Name != n.cfg.Name && len(m.Meta) == 8 {
			members = append(members, m)
		}
	}
	if len(members) == 0 || len(counts) == 0 {
		return
	}
	byMember := map[*memberlist.Node][]handover{}
	for id, c := range counts {
		giver := c.Giver
		if giver == 0 {
			giver = n.claims.self
		}
		m := successor(id, members)
		byMember[m] = append(byMember[m], handover{resource: id, giver: giver, payload: c.Payload, offer: true})
	}
	deadline := time.Now().Add(timeout)
	for m, hs := range byMember {
		if time.Now().After(deadline) {
			n.stats.Handovers[HandoverUnrouted].Add(int64(len(hs)))
			continue
		}
		n.deliver(binary.BigEndian.Uint64(m.Meta), hs)
		n.stats.Handovers[HandoverOffered].Add(int64(len(hs)))
	}
}

// successor is the member with the highest hash of the resource and its
// name: every stopping node picks the same one for a resource, and a member
// that leaves moves only its own share.
func successor(id ID, members []*memberlist.Node) *memberlist.Node {
	var best *memberlist.Node
	var bestScore uint64
	for _, m := range members {
		h := fnv.New64a()
		_, _ = h.Write(id[:])
		_, _ = h.Write([]byte(m.Name))
		if s := h.Sum64(); best == nil || s > bestScore {
			best, bestScore = m, s
		}
	}
	return best
}

// HandoverOutcome is what became of handovers at this node's level (the
// aggregator counts what it sent and received).
type HandoverOutcome uint8

const (
	// HandoverUnrouted: no live member with the node's ID, or sending failed.
	HandoverUnrouted HandoverOutcome = iota
	// HandoverOffered: sent to a successor when this node stopped.
	HandoverOffered
	// HandoverUnwanted: nobody waits for it (its giver holds the resource
	// again, or it was too late): dropped.
	HandoverUnwanted
	numHandoverOutcomes
)

var handoverOutcomeNames = [numHandoverOutcomes]string{"unrouted", "offered_on_stop", "unwanted"}

func (h HandoverOutcome) String() string { return handoverOutcomeNames[h] }

// NumHandoverOutcomes is the number of HandoverOutcome values.
const NumHandoverOutcomes = int(numHandoverOutcomes)
