package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"

import (
	"math"
	"sync"
	"time"
)

const (
	// scraperMisses is how many of its scrapes a scraper may miss before it
	// is taken for gone; scraperMinAbsence bounds that for fast scrapers.
	scraperMisses     = 3
	scraperMinAbsence = 30 * time.Second
	// maxScrapers bounds the scrapers remembered; the longest absent goes.
	maxScrapers = 64
	// oneOffMemory is how long a scraper that came once is remembered,
	// waiting for its second scrape.
	oneOffMemory = 10 * time.Minute
)

// scrapers remembers who scrapes the exporter (by address) and the encoding
// each was last served, so that a run of deltas is exposed as its zero until
// every scraper has seen that (store.Series.Held), and shutdown can wait
// until every scraper has taken the last deltas.
//
// A scraper counts once it has come twice, which shows its interval: a one-off
// request (a person with curl) must not hold runs back. Before any scraper
// counts, the latest scrape of anyone releases runs.
type scrapers struct {
	mu     sync.Mutex
	byHost map[string]*scraper
	// latest is when the newest encoding served to anyone began.
	latest int64
}

type scraper struct {
	served   int64 // when the latest encoding it was served began (store clock)
	arrived  int64 // when its latest scrape arrived
	interval int64 // the time between its last two scrapes, 0 after one
}

func newScrapers() *scrapers { return &scrapers{byHost: map[string]*scraper{}, latest: math.MinInt64} }

// served records that host's scrape, which arrived at arrived, was served
// whole from an encoding that began at began.
func (sc *scrapers) served(host string, arrived, began int64) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.latest = max(sc.latest, began)
	s := sc.byHost[host]
	if s == nil {
		if len(sc.byHost) >= maxScrapers {
			sc.forgetOldest()
		}
		sc.byHost[host] = &scraper{served: began, arrived: arrived}
		return
	}
	if arrived > s.arrived {
		s.interval, s.arrived = arrived-s.arrived, arrived
	}
	s.served = max(s.served, began)
}

func (sc *scrapers) forgetOldest() {
	var oldest string
	for h, s := range sc.byHost {
		if oldest == "" || s.arrived < sc.byHost[oldest].arrived {
			oldest = h
		}
	}
	delete(sc.byHost, oldest)
}

// regular reports whether s scrapes at an interval and has not missed too
// many of its scrapes by now.
func (s *scraper) regular(now int64) bool {
	return s.interval > 0 && now-s.arrived <= max(scraperMisses*s.interval, int64(scraperMinAbsence))
}

// releasedBefore is the store clock up to which every regular scraper has
// been served: runs of deltas that began no later are seen by all of them.
// It is math.MinInt64 before the first scrape.
func (sc *scrapers) releasedBefore(now int64) int64 {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	released, any := int64(math.MaxInt64), false
	for h, s := range sc.byHost {
		switch {
		case s.regular(now):
			released, any = min(released, s.served), true
		case s.interval > 0, now-s.arrived > int64(oneOffMemory):
			delete(sc.byHost, h) // it came regularly and stopped, or came once long ago
		}
	}
	if !any {
		return sc.latest
	}
	return released
}

// regularCount is the number of regular scrapers now.
func (sc *scrapers) regularCount(now int64) int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	n := 0
	for _, s := range sc.byHost {
		if s.regular(now) {
			n++
		}
	}
	return n
}
