//go:build !race

package soak

const raceEnabled = false
