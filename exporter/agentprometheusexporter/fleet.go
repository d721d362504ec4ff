package agentprometheusexporter // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter"

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/fleet"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/metadata"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/retire"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// leaveTimeout bounds how long shutdown waits to tell the fleet it leaves.
const leaveTimeout = 2 * time.Second

// gatewayFleet is the exporter's part in a fleet (fleet::enabled): the
// memberlist node while it runs, and what the node tells the retirement and
// the aggregator.
type gatewayFleet struct {
	cfg       *Config
	retire    *retire.Retirement
	agg       *aggregate.Aggregator // nil without aggregate rules
	telemetry *metadata.TelemetryBuilder
	logger    *zap.Logger
	now       func() int64
	// member is set while the gateway is a member of the fleet.
	member atomic.Pointer[fleetMember]
}

// fleetMember is a membership: the memberlist node.
type fleetMember struct {
	node *fleet.Node
}

// start joins the fleet when fleet::enabled.
func (g *gatewayFleet) start() error {
	cfg := g.cfg.Fleet
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
		g.logger.Warn("The fleet's gossip is not encrypted: anyone who reaches fleet::bind can join it and send claims; set fleet::secret_key_file")
	}
	host, _ := os.Hostname()
	m := &fleetMember{}
	fcfg := fleet.Config{
		// Unique per start, as memberlist needs: a restarted pod comes back
		// under its old host name before the fleet has seen it go.
		Name:           host + "-" + strings.ToLower(rand.Text()[:8]),
		Bind:           cfg.Bind,
		Advertise:      cfg.Advertise,
		Join:           cfg.Join,
		SecretKey:      key,
		ClaimInterval:  cfg.ClaimInterval,
		Retain:         g.cfg.MetricExpiration + retire.SweepInterval(g.cfg.MetricExpiration),
		MaxResources:   g.cfg.MaxSeries,
		RejoinInterval: cfg.RejoinInterval,
		Now:            g.now,
		Depart: func(id fleet.ID, through int64) bool {
			return g.retire.Depart(store.ID(id), through)
		},
	}
	if agg := g.agg; agg != nil {
		fcfg.Claimed = func(id fleet.ID, by uint64, point int64) {
			agg.Lost(store.ID(id), by, point, g.now())
		}
		fcfg.Receive = func(id fleet.ID, payload []byte, giver uint64, answers int64, keep bool) bool {
			return agg.Receive(store.ID(id), payload, aggregate.From{Giver: giver, Answers: answers}, keep, g.now())
		}
		fcfg.Preceded = func(id fleet.ID, node uint64) { agg.Preceded(store.ID(id), node) }
		fcfg.Gained = func(id fleet.ID, prev uint64, point int64) {
			agg.Gained(store.ID(id), prev, point, g.now())
		}
	}
	node, err := fleet.Start(fcfg, g.logger.With(zap.String("fleet", "memberlist")))
	if err != nil {
		return fmt.Errorf("fleet: %w", err)
	}
	m.node = node
	if err := g.registerTelemetry(node); err != nil {
		return errors.Join(err, node.Stop(0))
	}
	g.member.Store(m)
	g.logger.Info("Joined the fleet", zap.String("bind", cfg.Bind), zap.Strings("join", cfg.Join),
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

// stop hands the agents this gateway holds to successors and leaves the
// fleet.
func (g *gatewayFleet) stop() error {
	m := g.member.Swap(nil)
	if m == nil {
		return nil
	}
	if g.agg != nil && g.cfg.Fleet.HandoverTimeout > 0 {
		offers := map[fleet.ID]fleet.Counts{}
		for id, c := range g.agg.Offers() {
			offers[fleet.ID(id)] = fleet.Counts{Payload: c.Payload, Giver: c.Giver}
		}
		m.node.Offer(offers, leaveTimeout)
	}
	return m.node.Stop(leaveTimeout)
}

// received is the converter's hook: an agent's batch arrived. A gateway
// that claims the agent begins to count its aggregates.
func (g *gatewayFleet) received(r *store.Resource, newest int64) {
	if m := g.member.Load(); m != nil {
		if got, prev, point := m.node.Received(fleet.ID(r.ID()), newest); got == fleet.Claimed && g.agg != nil {
			g.agg.Gained(r.ID(), prev, point, g.now())
		}
	}
}

// owns reports whether this gateway holds the agent: always, outside a
// fleet.
func (g *gatewayFleet) owns(id store.ID) bool {
	m := g.member.Load()
	return m == nil || m.node.Owns(fleet.ID(id))
}

// hand sends an agent's counts to the gateway to, reliably.
func (g *gatewayFleet) hand(to uint64, id store.ID, payload []byte, from aggregate.From) bool {
	m := g.member.Load()
	return m != nil && m.node.Hand(to, fleet.ID(id), payload, from.Giver, from.Answers)
}

// handovers are the node's counts of handovers by outcome, nil outside a
// fleet.
func (g *gatewayFleet) handovers() []atomic.Int64 {
	if m := g.member.Load(); m != nil {
		return m.node.Stats().Handovers[:]
	}
	return nil
}

// registerTelemetry reports the node's counts; shutdown unregisters them
// with the other callbacks.
func (g *gatewayFleet) registerTelemetry(node *fleet.Node) error {
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
		g.telemetry.RegisterExporterAgentprometheusFleetMembersCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(node.Members()))
			return nil
		}),
		g.telemetry.RegisterExporterAgentprometheusFleetClaimsSentCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(stats.ClaimsSent.Load())
			return nil
		}),
		g.telemetry.RegisterExporterAgentprometheusFleetClaimsDeferredCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(stats.ClaimsDeferred.Load())
			return nil
		}),
		g.telemetry.RegisterExporterAgentprometheusFleetClaimsHeardCallback(func(_ context.Context, o metric.Int64Observer) error {
			for h := range stats.ClaimsHeard {
				o.Observe(stats.ClaimsHeard[h].Load(), heardOpts[h])
			}
			return nil
		}),
		g.telemetry.RegisterExporterAgentprometheusFleetClaimsQueuedCallback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(node.Queued()))
			return nil
		}),
		g.telemetry.RegisterExporterAgentprometheusFleetMessagesDroppedCallback(func(_ context.Context, o metric.Int64Observer) error {
			for d := range stats.Dropped {
				o.Observe(stats.Dropped[d].Load(), dropOpts[d])
			}
			return nil
		}),
	)
}
