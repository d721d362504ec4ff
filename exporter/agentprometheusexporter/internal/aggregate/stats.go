package aggregate // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"

// Reason is what became of a point.
type Reason uint8

const (
	// Aggregated: the point went into its group, or waits, kept, until this
	// gateway knows from where to count it.
	Aggregated Reason = iota
	// OutOfOrder: not newer than its source's latest point, or of an older
	// run: a retry, or two agents claiming one identity.
	OutOfOrder
	// Invalid: a value that is not a finite number (or a negative counter),
	// a start after the point's time, a histogram Prometheus would refuse.
	Invalid
	// BoundsMismatch: a classic histogram whose bucket bounds are not its
	// group's (or an exponential one in a classic histogram's group).
	BoundsMismatch
	// MaxSources: a new source beyond the sources held.
	MaxSources
	// Overflow: the group's count would pass 2^53 (or its value infinity),
	// where float64 no longer counts one by one.
	Overflow
	// GroupRefused: the group's series was refused by a store limit; the
	// caller counts it under the store's reason.
	GroupRefused
)

// Handover is what became of the counts of an agent that changed holders.
type Handover uint8

const (
	// HandoverSent: this gateway gave what it counted of an agent to the
	// agent's new holder.
	HandoverSent Handover = iota
	// HandoverUnsent: it could not (no route to the holder, a full queue).
	HandoverUnsent
	// HandoverApplied: this gateway counted on from counts handed to it.
	HandoverApplied
	// HandoverMissed: it began counting an agent without the counts of its
	// known previous holder (timed out), counting from its own first points;
	// or it dropped an offer that nobody claimed in time.
	HandoverMissed
	// HandoverLate: counts arrived after this gateway settled without them.
	HandoverLate
	// HandoverOffered: it keeps the counts of an agent it does not hold,
	// for the gateway that holds it next.
	HandoverOffered
	// HandoverMalformed: counts that could not be read.
	HandoverMalformed
	// HandoverStale: counts of another gateway than the holder this one
	// waits for, older than that one's: dropped.
	HandoverStale
	numHandovers
)

var handoverNames = [numHandovers]string{"sent", "unsent", "applied", "missed", "late", "offered", "malformed", "stale"}

func (h Handover) String() string { return handoverNames[h] }

// NumHandovers is the number of handover outcomes.
const NumHandovers = int(numHandovers)
