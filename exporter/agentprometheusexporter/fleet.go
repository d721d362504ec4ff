package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/fleet"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

const (
	// departBacklog bounds the departures waiting to be applied; one more
	// is dropped (counted) and its resource expires instead.
	departBacklog = 4096
	// departPoll is how often departed resources' held deltas are checked
	// against what the scrapers have taken.
	departPoll = 100 * time.Millisecond
	// leaveTimeout bounds how long shutdown waits to tell the fleet it leaves.
	leaveTimeout = 2 * time.Second
)

// departure is a resource that another gateway of the fleet now receives.
type departure struct {
	id      fleet.ID
	through int64 // the claim's point time
}

// departing is a departed resource whose delta series wait for the scrapers.
type departing struct {
	through int64
	held    store.Held
	// after is 0 until every held run shows its value; then the time after
	// which every scraper must have begun an encoding before they go.
	after int64
}

// fleetMember is the exporter's part in a fleet: the memberlist node and
// the goroutine that applies departures.
type fleetMember struct {
	node    *fleet.Node
	departs chan departure
	quit    chan struct{}
	done    chan struct{}
}

// startFleet joins the fleet when fleet::enabled.
func (e *agentPrometheusExporter) startFleet() error {
	cfg := e.cfg.Fleet
	if !cfg.Enabled {
		return nil
	}
	var key []byte
	if cfg.SecretKeyFile != "" {
		var err error
		if key, err = readSecretKey(cfg.SecretKeyFile); err != nil {
			return fmt.Errorf("fleet::secret_key_file: %w", err)
		}
	} else {
		e.set.Logger.Warn("The fleet's gossip is not encrypted: anyone who reaches fleet::bind can join it and send claims; set fleet::secret_key_file")
	}
	host, _ := os.Hostname()
	m := &fleetMember{departs: make(chan departure, departBacklog), quit: make(chan struct{}), done: make(chan struct{})}
	node, err := fleet.Start(fleet.Config{
		// Unique per start, as memberlist needs: a restarted pod comes back
		// under its old host name before the fleet has seen it go.
		Name:           host + "-" + strings.ToLower(rand.Text()[:8]),
		Bind:           cfg.Bind,
		Advertise:      cfg.Advertise,
		Join:           cfg.Join,
		SecretKey:      key,
		ClaimInterval:  cfg.ClaimInterval,
		Retain:         e.cfg.MetricExpiration + sweepInterval(e.cfg.MetricExpiration),
		MaxResources:   e.cfg.MaxSeries,
		RejoinInterval: cfg.RejoinInterval,
		Now:            func() int64 { return e.clock.now().UnixNano() },
		Depart: func(id fleet.ID, through int64) bool {
			select {
			case m.departs <- departure{id: id, through: through}:
				return true
			default:
				return false
			}
		},
	}, e.set.Logger.With(zap.String("fleet", "memberlist")))
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	m.node = node
	if err := e.registerFleetTelemetry(node); err != nil {
		return errors.Join(err, node.Stop(0))
	}
	e.fleet.Store(m)
	go e.applyDepartures(m)
	e.set.Logger.Info("Joined the fleet", zap.String("bind", cfg.Bind), zap.Strings("join", cfg.Join),
		zap.Duration("claim_interval", cfg.ClaimInterval), zap.Bool("encrypted", key != nil))
	return nil
}

// readSecretKey reads the base64 of a 16, 24 or 32-byte key, as
// `openssl rand -base64 32` writes it.
func readSecretKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil {
		return nil, fmt.Errorf("%s: want the base64 of a 16, 24 or 32-byte key: %w", path, err)
	}
	if n := len(key); n != 16 && n != 24 && n != 32 {
		return nil, fmt.Errorf("%s: the key is %d bytes, want 16, 24 or 32 (AES-128, -192 or -256)", path, n)
	}
	return key, nil
}

// stopFleet leaves the fleet and stops applying departures.
func (e *agentPrometheusExporter) stopFleet() error {
	m := e.fleet.Swap(nil)
	if m == nil {
		return nil
	}
	err := m.node.Stop(leaveTimeout)
	close(m.quit)
	<-m.done
	return err
}

// received is the converter's hook: an agent's batch arrived.
func (e *agentPrometheusExporter) received(r *store.Resource, newest int64) {
	if m := e.fleet.Load(); m != nil {
		m.node.Received(fleet.ID(r.ID()), newest)
	}
}

// applyDepartures removes the series of departed resources: cumulative and
// gauge series at once, those accumulating deltas once every scraper has
// taken them, as shutdown's drain waits for them (drainDeltas).
func (e *agentPrometheusExporter) applyDepartures(m *fleetMember) {
	defer close(m.done)
	pending := map[*store.Resource]*departing{}
	// A plain ticker: it only paces the checks, which read e.clock.
	tick := time.NewTicker(departPoll)
	defer tick.Stop()
	for {
		select {
		case <-m.quit:
			return
		case d := <-m.departs:
			r := e.store.ResourceByID(store.ID(d.id))
			if r == nil {
				continue
			}
			removed, held := e.store.Depart(r, d.through)
			e.recordDeparted(removed)
			if held.Series == 0 {
				continue
			}
			p := pending[r]
			if p == nil {
				p = &departing{}
				pending[r] = p
			}
			p.through = max(p.through, d.through)
			p.held.RunStarted = max(p.held.RunStarted, held.RunStarted)
			p.held.Updated = max(p.held.Updated, held.Updated)
			p.after = 0
		case <-tick.C:
			if len(pending) == 0 {
				continue
			}
			now := e.clock.now().UnixNano()
			rel := e.scrapers.Release(now)
			for r, p := range pending {
				if p.after == 0 {
					if p.held.RunStarted != 0 && rel.Value < p.held.RunStarted {
						continue
					}
					// Stamps run ahead of a clock that has not moved
					// since (internal/scrape): after the latest one too.
					p.after = max(p.held.Updated, now, e.scrapes.LastStamp()) + 1
				}
				if rel.Zero < p.after {
					continue
				}
				e.recordDeparted(e.store.DropHeld(r, p.through))
				delete(pending, r)
			}
		}
	}
}

// recordDeparted counts series removed by departures.
func (e *agentPrometheusExporter) recordDeparted(n int) {
	if n > 0 {
		e.telemetry.ExporterAgentprometheusSeriesRemoved.Add(context.Background(), int64(n), e.departedOpt)
	}
}

// registerFleetTelemetry reports the node's counts; shutdown unregisters
// them with the other callbacks.
func (e *agentPrometheusExporter) registerFleetTelemetry(node *fleet.Node) error {
	stats := node.Stats()
	heardOpts := make([]metric.ObserveOption, len(stats.ClaimsHeard))
	for h := range heardOpts {
		heardOpts[h] = metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", fleet.Heard(h).String())))
	}
	dropOpts := make([]metric.ObserveOption, len(stats.Dropped))
	for d := range dropOpts {
		dropOpts[d] = metric.WithAttributeSet(attribute.NewSet(attribute.String("reason", fleet.Drop(d).String())))
	}
	return errors.Join(
		e.telemetry.RegisterExporterAgentprometheusFleetMembersCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(node.Members()))
			return nil
		}),
		e.telemetry.RegisterExporterAgentprometheusFleetClaimsSentCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(stats.ClaimsSent.Load())
			return nil
		}),
		e.telemetry.RegisterExporterAgentprometheusFleetClaimsDeferredCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(stats.ClaimsDeferred.Load())
			return nil
		}),
		e.telemetry.RegisterExporterAgentprometheusFleetClaimsHeardCallback(func(_ context.Context, o metric.Int64Observer) error {
			for h := range stats.ClaimsHeard {
				o.Observe(stats.ClaimsHeard[h].Load(), heardOpts[h])
			}
			return nil
		}),
		e.telemetry.RegisterExporterAgentprometheusFleetMessagesDroppedCallback(func(_ context.Context, o metric.Int64Observer) error {
			for d := range stats.Dropped {
				o.Observe(stats.Dropped[d].Load(), dropOpts[d])
			}
			return nil
		}),
	)
}
