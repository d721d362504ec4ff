package soak

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/statsgate/statsgate/test/internal/gatewaytest"
)

// goroutines reads the first line of a debug=1 goroutine profile:
// "goroutine profile: total N".
func goroutines(pprofURL string) (int, error) {
	resp, err := gatewaytest.HTTPClient.Get(pprofURL + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	n, ok := strings.CutPrefix(strings.TrimSpace(line), "goroutine profile: total ")
	if !ok {
		return 0, fmt.Errorf("unexpected goroutine profile header %q", line)
	}
	return strconv.Atoi(n)
}

// liveHeap forces a GC in the gateway (gc=1) and reads HeapAlloc from the
// MemStats that a debug=1 heap profile ends with: the bytes still reachable,
// without the garbage that makes a plain heap reading swing by 2x. The
// least of three readings leaves out buffers that happen to be in use by an
// export at the moment of one GC, and pooled ones, which the second GC frees
// when nothing used them meanwhile (the soak holds scrapes back meanwhile).
func liveHeap(pprofURL string) (float64, error) {
	least := math.Inf(1)
	for i := range 3 {
		if i > 0 {
			time.Sleep(100 * time.Millisecond)
		}
		v, err := heapAfterGC(pprofURL)
		if err != nil {
			return 0, err
		}
		least = min(least, v)
	}
	return least, nil
}

func heapAfterGC(pprofURL string) (float64, error) {
	resp, err := gatewaytest.HTTPClient.Get(pprofURL + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapAlloc = "); ok {
			_, _ = io.Copy(io.Discard, resp.Body)
			return strconv.ParseFloat(v, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no HeapAlloc in the heap profile")
}
