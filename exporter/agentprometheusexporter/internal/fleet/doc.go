// Package fleet lets the gateways of a fleet tell each other which of them
// receives each resource (agent), so that the others stop holding it: the
// departure rule. Membership and messages go through
// github.com/hashicorp/memberlist (gossip over UDP, state exchange over TCP,
// AES-GCM with a shared key); this package only decides what to say and what
// to do with what it hears.
//
// The rule, per resource (job and instance):
//
//   - A gateway that receives a resource claims it, unless it made the latest
//     claim of it it knows of. A claim carries the newest point time the
//     gateway received from the resource (the agent's clock, the same on
//     every gateway) and the gateway's node ID.
//   - Damping: a gateway does not claim back a resource it gave up (heard a
//     newer claim of while it held it) less than the claim interval ago: it
//     holds the resource without claiming it, and claims on a later batch
//     once the interval has passed. A gateway the resource had not reached
//     claims at once, so an agent that moves (a reconnect, a restart) is
//     claimed on its first batch. Under per-request balancing every gateway
//     receives every agent, and each claim makes every other gateway give it
//     up: the resource changes hands about once per interval, which bounds
//     the series created and removed.
//   - A gateway that hears a claim newer than every claim it knows of
//     (ordered by point time, then node ID) records it; if it received the
//     resource and holds no point newer than the claim's, the resource
//     departs: the caller removes its series (internal/retire). A claim
//     not newer than what is known (a replay, a message that lost a race) is
//     stale and changes nothing.
//   - Gateways exchange their own claims in memberlist's periodic state
//     exchange too, so a lost broadcast or a healed partition still leads to
//     the departure.
//
// Nothing here is needed for exactness (sample timestamps are); it is what
// makes each agent's series be held by one gateway instead of by every
// gateway it visited until metric_expiration. Without the cluster (down,
// partitioned, a message lost) a gateway keeps what it received until it
// expires, as without this package.
package fleet // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/fleet"
