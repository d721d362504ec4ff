//go:build race

package storetest

// RaceEnabled: the race detector adds allocations of its own and slows the
// tests that run many seeds.
const RaceEnabled = true
