package scrape

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

func TestScrapersReleaseRunsStepByStep(t *testing.T) {
	sec := func(n int) int64 { return int64(n) * int64(time.Second) }
	rel := func(zero, value int64) store.Release { return store.Release{Zero: zero, Value: value} }
	min := int64(math.MinInt64)
	sc := NewScrapers()
	// served: a scrape that arrived at second n, read an encoding begun then, and ended 100 ms later.
	served := func(host string, n int) { sc.Served(host, sec(n), sec(n), sec(n)+sec(1)/10) }
	assert.Equal(t, rel(min, min), sc.Release(0), "before any scrape no run is shown")

	served("a", 0)
	assert.Equal(t, rel(sec(0), min), sc.Release(sec(1)), "the first scrape of anyone: the runs it left out are shown as zero")
	served("b", 5)
	served("a", 10)
	assert.Equal(t, rel(sec(10), sec(5)), sc.Release(sec(11)), "the runs the scrape at 10 showed as zero, with their values")

	served("b", 15)
	served("a", 20)
	assert.Equal(t, 2, sc.RegularCount(sec(21)))
	// Z reached 10 at 10.1 s, when a was served again; both were served
	// after that (b at 15, a at 20): the runs that began by 10 show values.
	assert.Equal(t, rel(sec(15), sec(10)), sc.Release(sec(21)))
	served("b", 25)
	served("a", 30)
	assert.Equal(t, rel(sec(25), sec(15)), sc.Release(sec(31)))

	sc.Served("curl", sec(31), sec(31), sec(31))
	assert.Equal(t, rel(sec(25), sec(15)), sc.Release(sec(32)), "a one-off scrape neither holds nor releases")

	// b stops coming: after 3 of its intervals (at least 30 s) it is gone.
	served("a", 40)
	served("a", 50)
	assert.Equal(t, sec(25), sc.Release(sec(54)).Zero, "b may still come")
	served("a", 60)
	// Z jumps to 60 now; runs it releases as zero show values after a's next scrape.
	assert.Equal(t, rel(sec(60), sec(25)), sc.Release(sec(61)), "b missed its scrapes: only a holds")
	served("a", 70)
	assert.Equal(t, rel(sec(70), sec(60)), sc.Release(sec(71)))
	assert.Equal(t, 1, sc.RegularCount(sec(71)))
}

func TestScrapersRememberABoundedNumber(t *testing.T) {
	sc := NewScrapers()
	for i := range 3 * maxScrapers {
		sc.Served(fmt.Sprintf("10.0.0.%d", i), int64(i), int64(i), int64(i))
	}
	assert.Len(t, sc.byHost, maxScrapers)
}
