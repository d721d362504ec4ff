//go:build unix

package scrape

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used, every thread's: on a
// machine shared with other work, a scrape's CPU time varies less than its
// wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
