//go:build race

package agentprometheusexporter

// raceEnabled: the race detector adds allocations of its own.
const raceEnabled = true
