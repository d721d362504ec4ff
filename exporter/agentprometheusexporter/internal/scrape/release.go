package scrape

import (
	"math"
	"sort"
	"sync"
	"time"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
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
	// maxSteps bounds the history of the zero release; it needs to reach
	// back one scrape interval of the slowest scraper only.
	maxSteps = 1024
)

// Scrapers remembers who scrapes the exporter (by address) and the latest
// encoding each was served, so that every scraper is shown a new run of
// deltas in steps (store.Series.Shown), and shutdown can wait until every
// scraper has taken the last deltas.
//
// The zero release Z(t) is how far every scraper had been served at time t:
// the earliest begin time of their latest encodings. A run that began by
// Z(now) has been left out of a scrape of every scraper, and is shown as its
// zero. It is shown with its value once every scraper has been served an
// encoding that began after its zero was first shown — after the time Z
// first reached the run's start — which is Z(now) > that time: the runs that
// began by Z(Z(now)-1). The history of Z makes that lookup.
//
// A scraper counts once it has come twice, which shows its interval: a one-off
// request (a person with curl) must not hold runs back. While no scraper
// counts, the scrapes of anyone release runs.
type Scrapers struct {
	mu     sync.Mutex
	byHost map[string]*scraper
	// anyone is when the latest encoding served to anyone began.
	anyone int64
	// steps is the history of Z, oldest first.
	steps []step
}

// step says that from store clock t on, Z was z.
type step struct{ t, z int64 }

type scraper struct {
	latest   int64 // when the latest encoding it was served began (store clock)
	arrived  int64 // when its latest scrape arrived
	interval int64 // the time between its last two scrapes, 0 after one
}

// NewScrapers knows no scraper yet.
func NewScrapers() *Scrapers {
	return &Scrapers{byHost: map[string]*scraper{}, anyone: math.MinInt64}
}

// Served records, at now, that host's scrape, which arrived at arrived, was
// served whole from an encoding that began at began.
func (sc *Scrapers) Served(host string, arrived, began, now int64) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.anyone = max(sc.anyone, began)
	s := sc.byHost[host]
	switch s {
	case nil:
		if len(sc.byHost) >= maxScrapers {
			sc.forgetOldest()
		}
		sc.byHost[host] = &scraper{latest: began, arrived: arrived}
	default:
		if arrived > s.arrived {
			s.interval, s.arrived = arrived-s.arrived, arrived
		}
		s.latest = max(s.latest, began)
	}
	// The change takes effect after the encoding began, on stamps that may
	// run ahead of a coarse clock.
	sc.zero(max(now, began))
}

func (sc *Scrapers) forgetOldest() {
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

// zero returns Z(now), forgetting the scrapers that have gone, and records
// it in the history when it changed. Call with sc.mu held.
func (sc *Scrapers) zero(now int64) int64 {
	z, any := int64(math.MaxInt64), false
	for h, s := range sc.byHost {
		switch {
		case s.regular(now):
			z, any = min(z, s.latest), true
		case s.interval > 0, now-s.arrived > int64(oneOffMemory):
			delete(sc.byHost, h) // it came regularly and stopped, or came once long ago
		}
	}
	if !any {
		z = sc.anyone
	}
	if n := len(sc.steps); n == 0 || sc.steps[n-1].z != z {
		if n > 0 {
			// Encoding stamps may run ahead of the clock: keep the history
			// in order for zeroAt's search.
			now = max(now, sc.steps[n-1].t)
		}
		if n == maxSteps {
			sc.steps = append(sc.steps[:0], sc.steps[1:]...)
		}
		sc.steps = append(sc.steps, step{t: now, z: z})
	}
	return z
}

// zeroAt is Z(t) from the history: math.MinInt64 before it begins.
func (sc *Scrapers) zeroAt(t int64) int64 {
	i := sort.Search(len(sc.steps), func(i int) bool { return sc.steps[i].t > t })
	if i == 0 {
		return math.MinInt64
	}
	return sc.steps[i-1].z
}

// Release says how scrapes show the runs of deltas now: as their zero those
// that began by Z(now), with their value those that began by Z(Z(now)-1).
func (sc *Scrapers) Release(now int64) store.Release {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	z := sc.zero(now)
	// Encodings that began at z may have begun just before Z rose at z:
	// only a later one is sure to have shown what Z released then.
	r := store.Release{Zero: z, Value: sc.zeroAt(z - 1)}
	// Steps before the one r.Value was read from are not needed any more:
	// Z rises, and so do the times later lookups ask about.
	if i := sort.Search(len(sc.steps), func(i int) bool { return sc.steps[i].t > z-1 }); i > 1 {
		sc.steps = append(sc.steps[:0], sc.steps[i-1:]...)
	}
	return r
}

// RegularCount is the number of regular scrapers now.
func (sc *Scrapers) RegularCount(now int64) int {
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
