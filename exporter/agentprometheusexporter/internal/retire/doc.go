// Package retire removes the series whose time is over, in three ways:
//
//   - expiry (sweep.go): a series nobody updated for metric_expiration goes,
//     whether or not anyone scrapes;
//   - departure (depart.go): in a fleet, when another gateway now receives
//     an agent, its series here go: cumulative and gauge series at once,
//     since Prometheus takes the newer copy from the other gateway (sample
//     timestamps), series that accumulate deltas once every scraper has
//     taken their value, which exists nowhere else;
//   - the shutdown drain (drain.go): a gateway that stops waits, for a
//     bounded time, until every scraper has taken the deltas accumulated
//     since its last scrape.
//
// What the scrapers have been shown comes from the scrape package through
// Scrapes; the store removes the series (Store.Sweep, RemoveUpTo,
// RemoveDeltasUpTo).
package retire // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/retire"
