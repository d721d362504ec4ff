//go:build !unix

package scrape

import "time"

// cpuTime is not measured here.
func cpuTime() time.Duration { return 0 }
