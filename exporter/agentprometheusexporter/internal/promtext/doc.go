// Package promtext holds the rules of Prometheus' text formats that more
// than one part of the exporter applies: the converter when it renders label
// sets and bucket bounds, the writers when they write an exposition. Each
// rule is one function here, so that a label set rendered at ingestion and a
// line written at scrape time cannot disagree.
package promtext // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/promtext"
