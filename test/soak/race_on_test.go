//go:build race

package soak

// raceEnabled: the race detector slows this test's own agents and parsing
// several times over, below the load and cadence the soak needs.
const raceEnabled = true
