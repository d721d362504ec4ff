package fleet

import (
	"crypto/rand"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/statsgate/statsgate/internal/testnet"
)

// memberlist's Shutdown does not wait for a probe in progress, which ends on
// its own at its timeout; every other goroutine must be gone.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/hashicorp/memberlist.(*Memberlist).probeNode"))
}

// departures records what a node's Depart callback was called with.
type departures struct {
	mu  sync.Mutex
	got map[ID]int64
}

func (d *departures) depart(id ID, through int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.got == nil {
		d.got = map[ID]int64{}
	}
	d.got[id] = through
	return true
}

func (d *departures) of(id ID) (int64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.got[id]
	return v, ok
}

type testNode struct {
	*Node
	departed *departures
	addr     string
}

func newKey(t *testing.T) []byte {
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	return key
}

// startNode runs a real memberlist node on a free loopback port.
func startNode(t *testing.T, name string, key []byte, join ...string) *testNode {
	t.Helper()
	d := &departures{}
	n, err := Start(Config{
		Name: name, Bind: "127.0.0.1:0", Join: join, SecretKey: key,
		ClaimInterval: 15 * time.Second, Retain: time.Minute, MaxResources: 1000,
		RejoinInterval: 200 * time.Millisecond,
		Now:            func() int64 { return time.Now().UnixNano() },
		Depart:         d.depart,
	}, zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)).Named(name))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, n.Stop(time.Second)) })
	local := n.ml.LocalNode()
	return &testNode{Node: n, departed: d, addr: net.JoinHostPort(local.Addr.String(), strconv.Itoa(int(local.Port)))}
}

func membersOf(nodes []*testNode) []string {
	var out []string
	for _, n := range nodes {
		var names []string
		for _, m := range n.ml.Members() {
			names = append(names, m.Name)
		}
		out = append(out, fmt.Sprint(n.cfg.Name, "=", names))
	}
	return out
}

func waitMembers(t *testing.T, want int, nodes ...*testNode) {
	t.Helper()
	if !assert.Eventually(t, func() bool {
		for _, n := range nodes {
			if n.Members() != want {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond) {
		t.Fatalf("not every node sees %d members: %v", want, membersOf(nodes))
	}
}

func TestAnAgentThatMovesDepartsTheNodeItLeft(t *testing.T) {
	key := newKey(t)
	a := startNode(t, "a", key)
	b := startNode(t, "b", key, a.addr)
	waitMembers(t, 2, a, b)

	point := time.Now().UnixNano()
	a.Received(agent, point)
	b.Received(agent, point+int64(time.Minute)) // the agent's next export, on b
	require.Eventually(t, func() bool { _, ok := a.departed.of(agent); return ok }, 5*time.Second, 10*time.Millisecond,
		"a hears b's claim")
	through, _ := a.departed.of(agent)
	assert.Equal(t, point+int64(time.Minute), through, "a departs up to b's newest point")
	_, departedB := b.departed.of(agent)
	assert.False(t, departedB, "a's claim is older than what b holds")
	assert.Equal(t, int64(1), a.Stats().ClaimsSent.Load())
	assert.Equal(t, int64(1), b.Stats().ClaimsSent.Load())
	assert.Equal(t, int64(1), a.Stats().ClaimsHeard[Departed].Load())
}

// A node that was alone (its peers unreachable, a partition) and claimed an
// agent another node claimed meanwhile learns of the newer claim in the state
// exchange when they meet: the departure happens without the broadcast.
func TestStateExchangeDepartsWhatABroadcastCouldNotReach(t *testing.T) {
	key := newKey(t)
	a := startNode(t, "a", key)
	point := time.Now().UnixNano()
	a.Received(agent, point)
	b := startNode(t, "b", key)
	b.Received(agent, point+int64(time.Second))
	require.Equal(t, 1, a.Members())

	_, err := b.ml.Join([]string{a.addr})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, ok := a.departed.of(agent); return ok }, 5*time.Second, 10*time.Millisecond)
	_, departedB := b.departed.of(agent)
	assert.False(t, departedB)
}

func TestANodeAloneJoinsItsPeersOnceTheyAreThere(t *testing.T) {
	key := newKey(t)
	// b's peer is not listening yet: b starts alone and retries.
	port := testnet.FreePort(t)
	peer := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	b := startNode(t, "b", key, peer)
	require.Equal(t, 1, b.Members())
	d := &departures{}
	a, err := Start(Config{
		Name: "a", Bind: peer, SecretKey: key, ClaimInterval: time.Second, Retain: time.Minute, MaxResources: 10,
		RejoinInterval: time.Hour, Now: func() int64 { return time.Now().UnixNano() }, Depart: d.depart,
	}, zaptest.NewLogger(t))
	require.NoError(t, err)
	defer func() { assert.NoError(t, a.Stop(time.Second)) }()
	waitMembers(t, 2, b, &testNode{Node: a})
}

// Anyone who reaches the gossip port can send anything: packets and streams
// without the key are dropped and counted, and the node goes on working.
func TestPacketsWithoutTheKeyAreDroppedAndCounted(t *testing.T) {
	key := newKey(t)
	a := startNode(t, "a", key)
	dropped := func() int64 { return a.Stats().Dropped[DropUnauthenticated].Load() }

	junk := make([]byte, 512)
	for range 5 {
		_, err := rand.Read(junk)
		require.NoError(t, err)
		u, err := net.Dial("udp", a.addr)
		require.NoError(t, err)
		_, err = u.Write(junk)
		require.NoError(t, err)
		u.Close()
	}
	require.Eventually(t, func() bool { return dropped() >= 5 }, 5*time.Second, 10*time.Millisecond, "random UDP packets")

	before := dropped()
	c, err := net.Dial("tcp", a.addr)
	require.NoError(t, err)
	// A stream that says it is encrypted (memberlist's encryptMsg, 10, and
	// a length), with bytes no key decrypts.
	_, err = c.Write(append([]byte{10, 0, 0, 1, 0}, junk[:256]...))
	require.NoError(t, err)
	c.Close()
	require.Eventually(t, func() bool { return dropped() > before }, 5*time.Second, 10*time.Millisecond, "a TCP stream without the key")

	// A memberlist node with another key cannot join, and cannot make a depart.
	before = dropped()
	a.Received(agent, time.Now().UnixNano())
	intruder := startNode(t, "intruder", newKey(t))
	intruder.Received(agent, time.Now().Add(time.Hour).UnixNano())
	_, err = intruder.ml.Join([]string{a.addr})
	require.Error(t, err)
	assert.Greater(t, dropped(), before)
	assert.Equal(t, 1, a.Members())
	// And without any key.
	plain := startNode(t, "plain", nil)
	_, err = plain.ml.Join([]string{a.addr})
	require.Error(t, err)

	// The node still works with its fleet.
	b := startNode(t, "b", key, a.addr)
	waitMembers(t, 2, a, b)
	// (Another agent: b learnt a's claim of the first as it joined, and
	// defers its own for the damping interval.)
	other := ID{2}
	a.Received(other, time.Now().UnixNano())
	b.Received(other, time.Now().Add(time.Minute).UnixNano())
	require.Eventually(t, func() bool { _, ok := a.departed.of(other); return ok }, 5*time.Second, 10*time.Millisecond)
	_, ok := a.departed.of(agent)
	assert.False(t, ok, "the intruder's claim never reached a")
}

// A node with the key that sends what is not a message (a bug, another
// version) has it dropped and counted, whole.
func TestMalformedMessagesFromAKeyHolderAreDroppedAndCounted(t *testing.T) {
	key := newKey(t)
	a := startNode(t, "a", key)
	b := startNode(t, "b", key, a.addr)
	waitMembers(t, 2, a, b)
	a.Received(agent, 100)
	var aNode = a.ml.LocalNode()
	for i, msg := range [][]byte{
		{2, 1, 2, 3},
		append(appendMessage(nil, Claim{Resource: agent, Point: 200, Node: 5}), 0),
		appendMessage(nil, Claim{Resource: agent, Point: 200, Node: 0}),
	} {
		require.NoError(t, b.ml.SendReliable(aNode, msg), "message %d", i)
	}
	require.Eventually(t, func() bool { return a.Stats().Dropped[DropMalformed].Load() == 3 }, 5*time.Second, 10*time.Millisecond)
	_, ok := a.departed.of(agent)
	assert.False(t, ok, "no claim of a malformed message applies")
}

func TestNodesLeaveCleanly(t *testing.T) {
	key := newKey(t)
	a := startNode(t, "a", key)
	nodes := []*testNode{a}
	for i := range 3 {
		nodes = append(nodes, startNode(t, fmt.Sprint("n", i), key, a.addr))
	}
	waitMembers(t, 4, nodes...)
	require.NoError(t, nodes[3].Stop(time.Second))
	waitMembers(t, 3, nodes[:3]...)
}

// memberlist sends a broadcast to a few random members only; members relay
// the claims that are news to them, so that every member hears each one.
func TestEveryMemberHearsAClaim(t *testing.T) {
	key := newKey(t)
	// Each node joins every node before it, as a headless Service's name
	// gives every replica: membership then does not wait for memberlist's
	// gossip of joins (a node can miss another's join for longer than the
	// wait, until the periodic state exchange), which is not what this
	// test is about.
	nodes := []*testNode{startNode(t, "n0", key)}
	for i := 1; i < 6; i++ {
		var peers []string
		for _, n := range nodes {
			peers = append(peers, n.addr)
		}
		nodes = append(nodes, startNode(t, fmt.Sprint("n", i), key, peers...))
	}
	waitMembers(t, len(nodes), nodes...)
	point := time.Now().UnixNano()
	for round := range 5 {
		id := ID{0x40, byte(round)}
		for _, n := range nodes[1:] {
			n.Received(id, point)
		}
		nodes[0].Received(id, point+int64(time.Minute))
		require.Eventually(t, func() bool {
			for _, n := range nodes[1:] {
				if _, ok := n.departed.of(id); !ok {
					return false
				}
			}
			return true
		}, 5*time.Second, 10*time.Millisecond, "round %d: every member that held the agent lets it go", round)
	}
}
