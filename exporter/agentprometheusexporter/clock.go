package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"

import "time"

// clock is the time source of expiry; tests replace it to expire series
// without waiting.
type clock struct {
	now       func() time.Time
	newTicker func(time.Duration) (<-chan time.Time, func())
}

var wallClock = clock{
	now: time.Now,
	newTicker: func(d time.Duration) (<-chan time.Time, func()) {
		t := time.NewTicker(d)
		return t.C, t.Stop
	},
}
