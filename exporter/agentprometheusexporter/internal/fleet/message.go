package fleet // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/fleet"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// ID names a resource in messages: a hash of its key (internal/store.IDOf).
type ID [16]byte

// Claim says that a node receives a resource, with points up to Point.
type Claim struct {
	Resource ID
	Point    int64  // the newest point time the claimant received, unix nanoseconds
	Node     uint64 // the claimant's node ID, never 0
	// Age is how long before the message was sent the claim was made: 0 in
	// a broadcast, the claim's age in a state exchange, so that the damping
	// interval runs from when the claim was made.
	Age time.Duration
}

// newer reports whether c orders after the claim (point, node).
func (c Claim) newer(point int64, node uint64) bool {
	return c.Point > point || c.Point == point && c.Node > node
}

// A message is a version byte followed by one claim (a broadcast) or any
// number of them (a state exchange), each of claimSize bytes: the resource
// ID, the point time and node ID as big-endian 64-bit integers, the age in
// milliseconds as a big-endian 32-bit integer.
const (
	version   = 1
	claimSize = 16 + 8 + 8 + 4
	// maxAge bounds the age a message can say: the longest a claim is kept
	// is far below it, so a larger age is not a claim anybody made.
	maxAge = 24 * time.Hour
)

// errMalformed wraps every reason a message is refused.
var errMalformed = errors.New("malformed fleet message")

// appendMessage appends a message holding claims.
func appendMessage(b []byte, claims ...Claim) []byte {
	b = append(b, version)
	for _, c := range claims {
		b = append(b, c.Resource[:]...)
		b = binary.BigEndian.AppendUint64(b, uint64(c.Point))
		b = binary.BigEndian.AppendUint64(b, c.Node)
		b = binary.BigEndian.AppendUint32(b, uint32(min(max(c.Age, 0), maxAge).Milliseconds()))
	}
	return b
}

// decodeMessage calls fn for each claim of a message, after checking the
// whole message: a malformed message yields no claim.
func decodeMessage(b []byte, fn func(Claim)) error {
	if len(b) == 0 || b[0] != version {
		return fmt.Errorf("%w: unknown version", errMalformed)
	}
	body := b[1:]
	if len(body)%claimSize != 0 {
		return fmt.Errorf("%w: %d bytes after the version, not a whole number of %d-byte claims", errMalformed, len(body), claimSize)
	}
	for rest := body; len(rest) > 0; rest = rest[claimSize:] {
		if c := readClaim(rest); c.Point <= 0 || c.Node == 0 || c.Age > maxAge {
			return fmt.Errorf("%w: a claim with point %d, node %d, age %v", errMalformed, c.Point, c.Node, c.Age)
		}
	}
	for rest := body; len(rest) > 0; rest = rest[claimSize:] {
		fn(readClaim(rest))
	}
	return nil
}

func readClaim(b []byte) Claim {
	var c Claim
	copy(c.Resource[:], b[:16])
	c.Point = int64(binary.BigEndian.Uint64(b[16:24]))
	c.Node = binary.BigEndian.Uint64(b[24:32])
	c.Age = time.Duration(binary.BigEndian.Uint32(b[32:36])) * time.Millisecond
	return c
}
