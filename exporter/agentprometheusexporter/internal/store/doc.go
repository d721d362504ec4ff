// Package store holds the exporter's series between ingestion and scrapes.
//
// A Family is one Prometheus metric family (name, type, help). Its series are
// identified by their label set (LabelSet): a set of names shared by every
// series with those names, and the series' own escaped values. Two inputs
// that would expose the same series update one record, and a scrape never
// writes a series twice. Series records hold plain values, never pdata.
//
// Locking: the store's map of families and resources is guarded by one
// RWMutex that ingestion only reads; each family has its own RWMutex, taken
// for one metric of a batch at a time by ingestion and for a bounded chunk of
// series at a time by scrapes and the expiry sweep, so neither blocks the
// other for long.
package store // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
