package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// procMemory reads VmRSS and VmHWM (MiB) from /proc/<pid>/status.
func procMemory(pid int) (rss, hwm float64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	var gotRSS, gotHWM bool
	for _, line := range strings.Split(string(b), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		fields := strings.Fields(val)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, 0, fmt.Errorf("/proc/%d/status: unexpected %s line %q", pid, key, line)
		}
		kb, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, 0, err
		}
		if key == "VmRSS" {
			rss, gotRSS = kb/1024, true
		} else {
			hwm, gotHWM = kb/1024, true
		}
	}
	if !gotRSS || !gotHWM {
		return 0, 0, fmt.Errorf("/proc/%d/status: no VmRSS/VmHWM", pid)
	}
	return rss, hwm, nil
}
