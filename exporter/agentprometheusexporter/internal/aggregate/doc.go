// Package aggregate sums the series of many agents into groups by chosen
// labels, at the gateway, exactly: an aggregated counter never goes down
// while the gateway runs, and summed over a fleet's replicas its increase
// over any window is the sum of what the agents counted in it.
//
// A rule (Rule) takes the metrics whose OTLP names it matches and keeps
// some of their attributes (by, or all but some: without); the points of
// every agent with the same kept labels go into one group, an ordinary
// series of the store without an instance label, whose value exists only
// here (store.Series.Delta: every scraper is shown its zero before its
// value, and shutdown waits for the scrapers to take the last one).
//
// A group adds up increments, never current values. Each agent's series is
// a source (one per agent, scope, metric and attribute set), whose state is
// its latest point:
//
//   - a cumulative counter or histogram adds what it grew since its latest
//     point; when it went down or its start time moved (the agent
//     restarted), all of its value, which it counted from zero since;
//   - a delta adds each point once, wherever it arrives (a point not newer
//     than its source's latest is a retry);
//   - a gauge is its latest value: a group holds its members' sum, maximum
//     or minimum, and a gauge that leaves takes its value with it.
//
// So an agent that stops, expires or restarts never lowers a group: what it
// counted stays counted. Points that are not finite, a start after the
// point, out-of-order points, histograms whose bounds are not their group's
// and counts beyond 2^53 are refused and counted by reason.
//
// In a fleet (internal/fleet) only the gateway that holds an agent — that
// made the latest claim of it — counts its cumulative sources and gauges;
// another keeps the agent's latest points, uncounted. When a gateway claims
// an agent, the one that held it hands it what it counted (Lost, Receive:
// each source's latest point), and the new holder counts on from there
// (settle): not an increment is counted twice or lost. Without the counts
// (a holder that died, a handover slower than the timeout) it counts from
// its own first points, and says so (HandoverMissed); it never guesses. A
// gateway that stops hands the agents it holds to a successor, which keeps
// them for whichever gateway the agents reach next (Offers).
package aggregate // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"
