//go:build !race

package agentprometheusexporter

const raceEnabled = false
