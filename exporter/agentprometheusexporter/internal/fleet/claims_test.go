package fleet

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	self  = 10
	other = 20
	third = 30
)

var agent = ID{1}

func sec(s float64) int64 { return int64(s * float64(time.Second)) }

func newTestClaims() *claims { return newClaims(self, 15*time.Second, time.Minute, 100) }

func TestReceivingAResourceClaimsIt(t *testing.T) {
	c := newTestClaims()
	cl, r, _ := c.received(agent, sec(100), sec(1))
	require.Equal(t, Claimed, r)
	assert.Equal(t, Claim{Resource: agent, Point: sec(100), Node: self}, cl)

	// Its next batches say nothing: this node made the latest claim.
	_, r, _ = c.received(agent, sec(101), sec(2))
	assert.Equal(t, Held, r)
	// The claim it hands on in a state exchange is the claim it made, with
	// its age: its point does not grow with what the node receives since.
	assert.Equal(t, []Claim{{Resource: agent, Point: sec(100), Node: self, Age: time.Second}}, c.own(sec(2)))
}

func TestAClaimNotOlderThanWhatIsHeldHereDeparts(t *testing.T) {
	c := newTestClaims()
	c.received(agent, sec(100), sec(1))
	// The agent moved: another node received its next point.
	assert.Equal(t, Departed, c.heard(Claim{Resource: agent, Point: sec(101), Node: other}, sec(2)))
	assert.Empty(t, c.own(sec(2)), "the claim is the other node's now")
	// The same claim again (memberlist retransmits, a replay) changes nothing.
	assert.Equal(t, Stale, c.heard(Claim{Resource: agent, Point: sec(101), Node: other}, sec(3)))
	// A claim of an equal point: the tie goes to the higher node ID (and
	// this node, which let the agent go, has nothing more to give up).
	assert.Equal(t, NotHeld, c.heard(Claim{Resource: agent, Point: sec(101), Node: third}, sec(3)))
	assert.Equal(t, Stale, c.heard(Claim{Resource: agent, Point: sec(101), Node: other}, sec(3)))
}

func TestAClaimMadeWhileThisNodeReceivedNewerPointsTakesTheResource(t *testing.T) {
	c := newTestClaims()
	c.received(agent, sec(100), sec(1))
	c.received(agent, sec(105), sec(6))
	// Another node claimed with 103 before this one's 105 arrived: its claim
	// orders after this node's (100), so it holds the resource; this node
	// keeps its newer point (and, aggregating, hands over what it counted).
	assert.Equal(t, KeptNewer, c.heard(Claim{Resource: agent, Point: sec(103), Node: other}, sec(7)))
	assert.Equal(t, uint64(other), c.latest(agent))
	_, r, _ := c.received(agent, sec(106), sec(7))
	assert.Equal(t, Deferred, r, "damped: it gave the resource up just now")
	// A claim older than this node's, replayed, is stale.
	d := newTestClaims()
	d.received(agent, sec(100), sec(1))
	assert.Equal(t, Stale, d.heard(Claim{Resource: agent, Point: sec(99), Node: other}, sec(2)))
	assert.Equal(t, uint64(self), d.latest(agent))
}

func TestANewerClaimKeepsWhatThisNodeReceivedSinceWithoutClaiming(t *testing.T) {
	c := newTestClaims()
	c.received(agent, sec(100), sec(1))
	require.Equal(t, Departed, c.heard(Claim{Resource: agent, Point: sec(101), Node: other}, sec(2)))
	// Back here within the interval: held, not claimed.
	_, r, _ := c.received(agent, sec(110), sec(5))
	require.Equal(t, Deferred, r)
	// A third node's claim newer than the latest known but older than what
	// this node holds: the claim is recorded, the resource stays.
	assert.Equal(t, KeptNewer, c.heard(Claim{Resource: agent, Point: sec(108), Node: third}, sec(6)))
}

func TestAnAgentThatMovesIsClaimedOnItsFirstBatch(t *testing.T) {
	c := newTestClaims()
	// Another node claimed the agent a moment ago; it had not reached this one.
	require.Equal(t, NotHeld, c.heard(Claim{Resource: agent, Point: sec(100), Node: other}, sec(10)))
	_, r, _ := c.received(agent, sec(101), sec(10.5))
	assert.Equal(t, Claimed, r, "no damping for a node the agent had not reached")
}

// An agent going round the replicas: each claim is heard by every node, but
// only the node that held the agent gives it up; the others, which let it
// go earlier, claim it at once when it comes back after the interval.
func TestAnAgentComingBackLaterIsClaimedAtOnce(t *testing.T) {
	c := newTestClaims()
	c.received(agent, sec(100), sec(0))
	require.Equal(t, Departed, c.heard(Claim{Resource: agent, Point: sec(110), Node: other}, sec(10)))
	assert.Equal(t, NotHeld, c.heard(Claim{Resource: agent, Point: sec(120), Node: third}, sec(20)), "let go at the earlier claim")
	_, r, _ := c.received(agent, sec(130), sec(30))
	assert.Equal(t, Claimed, r, "given up 20 s ago, more than the interval")
}

// The claimant's state exchange carries its claim again with its newest
// point: no hand-over, so the damping of a node holding the agent unclaimed
// does not start again.
func TestTheSameClaimAgainDoesNotRenewTheDamping(t *testing.T) {
	c := newTestClaims()
	c.received(agent, sec(100), sec(0))
	require.Equal(t, Departed, c.heard(Claim{Resource: agent, Point: sec(110), Node: other}, sec(10)))
	_, r, _ := c.received(agent, sec(120), sec(20)) // it came back within the interval
	require.Equal(t, Deferred, r)
	require.Equal(t, KeptNewer, c.heard(Claim{Resource: agent, Point: sec(115), Node: other, Age: 15 * time.Second}, sec(22)))
	_, r, _ = c.received(agent, sec(125), sec(25))
	assert.Equal(t, Claimed, r, "15 s after it gave the agent up")
	// A third node's claim in between is a hand-over: the damping starts again.
	d := newTestClaims()
	d.received(agent, sec(100), sec(0))
	d.heard(Claim{Resource: agent, Point: sec(110), Node: other}, sec(10))
	d.received(agent, sec(120), sec(20))
	require.Equal(t, KeptNewer, d.heard(Claim{Resource: agent, Point: sec(115), Node: third}, sec(22)))
	_, r, _ = d.received(agent, sec(125), sec(25))
	assert.Equal(t, Deferred, r)
}

func TestAGivenUpAgentIsNotClaimedBackWithinTheInterval(t *testing.T) {
	c := newTestClaims()
	c.received(agent, sec(100), sec(9))
	require.Equal(t, Departed, c.heard(Claim{Resource: agent, Point: sec(100), Node: other}, sec(10)))
	// Per-request balancing: the agent's batches reach this node too.
	for at := 11.0; at < 25; at++ {
		_, r, _ := c.received(agent, sec(100+at), sec(at))
		require.Equal(t, Deferred, r, "at %v s, %v s after it gave the agent up", at, at-10)
	}
	cl, r, _ := c.received(agent, sec(125), sec(25))
	require.Equal(t, Claimed, r, "the interval (15 s) has passed")
	assert.Equal(t, sec(125), cl.Point)
	// And the other node, which kept receiving it, gives it up in turn and
	// does not claim it back before the interval.
	o := newClaims(other, 15*time.Second, time.Minute, 100)
	o.received(agent, sec(124), sec(24))
	require.Equal(t, Departed, o.heard(cl, sec(25)))
	_, r, _ = o.received(agent, sec(126), sec(26))
	assert.Equal(t, Deferred, r)
}

// Under per-request balancing every node receives the agent: each claim
// makes all the others give it up, so the next claim comes an interval later.
func TestSprayedAgentsChangeHandsOncePerInterval(t *testing.T) {
	const nodes = 3
	fleet := make([]*claims, nodes)
	for i := range fleet {
		fleet[i] = newClaims(uint64(i+1), 15*time.Second, time.Hour, 100)
	}
	claimsMade := 0
	for at := 0.0; at < 120; at++ { // a batch a second, to the nodes in turn
		n := fleet[int(at)%nodes]
		cl, r, _ := n.received(agent, sec(1000+at), sec(at))
		if r != Claimed {
			continue
		}
		claimsMade++
		for _, o := range fleet {
			o.heard(cl, sec(at)) // gossip: at once here
		}
	}
	// The first claim of each node (nothing given up yet), then one per 15 s.
	assert.LessOrEqual(t, claimsMade, nodes+120/15, "claims in two minutes")
	assert.GreaterOrEqual(t, claimsMade, 120/15, "the agent still changes hands, once per interval")
}

func TestWithoutDampingEveryBatchAfterAnotherClaimClaims(t *testing.T) {
	c := newClaims(self, 0, time.Minute, 100)
	c.received(agent, sec(99), sec(9))
	c.heard(Claim{Resource: agent, Point: sec(100), Node: other}, sec(10))
	_, r, _ := c.received(agent, sec(101), sec(10.5))
	assert.Equal(t, Claimed, r)
}

func TestOwnClaimsComingBackChangeNothing(t *testing.T) {
	c := newTestClaims()
	c.received(agent, sec(100), sec(1))
	assert.Equal(t, Own, c.heard(Claim{Resource: agent, Point: sec(200), Node: self}, sec(2)))
	_, r, _ := c.received(agent, sec(101), sec(2))
	assert.Equal(t, Held, r)
}

func TestResourcesNobodyMentionsAreForgotten(t *testing.T) {
	c := newTestClaims()
	c.received(agent, sec(100), sec(0))
	c.heard(Claim{Resource: ID{2}, Point: sec(100), Node: other}, sec(30))
	c.forget(sec(61))
	assert.Equal(t, 1, c.len(), "the resource received at 0 s is forgotten after a minute, the one heard at 30 s is not")
	c.forget(sec(91))
	assert.Zero(t, c.len())
}

func TestClaimsOfResourcesNotHeldAreBounded(t *testing.T) {
	c := newClaims(self, 15*time.Second, time.Minute, 2)
	for i := range 5 {
		c.heard(Claim{Resource: ID{0x80 + byte(i)}, Point: sec(100), Node: other}, sec(1))
	}
	assert.Equal(t, 2, c.len())
	// What this node receives is always remembered.
	c.received(agent, sec(100), sec(1))
	assert.Equal(t, 3, c.len())
}

func TestAStateExchangeCarriesTheYoungestClaims(t *testing.T) {
	c := newClaims(self, 0, time.Hour, 2*maxStateClaims)
	for i := range maxStateClaims + 10 {
		var id ID
		id[0], id[1], id[2] = byte(i), byte(i>>8), byte(i>>16)
		c.received(id, sec(100), int64(i))
	}
	got := c.own(int64(maxStateClaims + 10))
	require.Len(t, got, maxStateClaims)
	for _, cl := range got {
		assert.LessOrEqual(t, cl.Age, time.Duration(maxStateClaims), "an older claim was left out")
	}
}
