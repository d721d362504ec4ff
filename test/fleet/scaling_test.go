package fleet

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/internal/agentmanifest"
	"github.com/statsgate/statsgate/test/internal/gatewaytest"
	"github.com/statsgate/statsgate/test/internal/proctest"
)

// The scaling run's workload and timings. STATSGATE_FLEET_SCALING_QUICK=1
// shortens every run to 40 s; STATSGATE_FLEET_SCALING_AGENTS, _FLOOD,
// _WARMUP and _SAMPLE set the rest (scalingParamsFromEnv).
const (
	scalingAgents = 40
	// scalingFlood is otlpagent's --flood: each agent's extra counter with
	// this many attribute values, besides its counter and histogram of three
	// kinds each: scalingFlood+6 OTLP series per agent.
	scalingFlood       = 400
	scalingExportEvery = time.Second
	// The agents reconnect, through the load balancer, every
	// scalingConnectionAge (±10 %, grpc-go's jitter).
	scalingConnectionAge   = 10 * time.Second
	scalingConnectionGrace = 2 * time.Second
	// scalingWarmup is how long the agents export before the sampling. A
	// run without departure goes on until its replicas' holdings are steady
	// (scalingParams.warmupOf).
	scalingWarmup      = 100 * time.Second
	scalingSampleFor   = 30 * time.Second
	scalingSampleEvery = 2 * time.Second
	// scalingTraceEvery: the replicas' telemetry is read this often during
	// the warm-up, to show in the JSON how their holdings grew.
	scalingTraceEvery = 5 * time.Second
	// scalingRatesFrom: claims and series created are counted from this
	// long after the agents started (past their first connection's burst of
	// new series) to the last sample.
	scalingRatesFrom = 30 * time.Second
	// scalingJob is the agents' service.name, their job label.
	scalingJob = "scaling"
)

// The shipped config's settings that the configurations change.
const (
	shippedExpiration      = 5 * time.Minute
	shippedConnectionAge   = 2 * time.Minute
	shippedConnectionGrace = 30 * time.Second
	// The replicas' expiry sweep runs every quarter of metric_expiration,
	// at least every second.
	minSweep = time.Second
)

// scalingParams is the run's size and timing.
type scalingParams struct {
	Agents      int     `json:"agents"`
	Flood       int     `json:"flood"`
	ExportEvery float64 `json:"export_interval_s"`
	// WarmupS is the warm-up of runs with departure; runs without go on
	// until steady unless FixedWarmup.
	WarmupS     float64 `json:"warmup_s"`
	FixedWarmup bool    `json:"fixed_warmup"`
	SampleForS  float64 `json:"sample_for_s"`
	SampleEvery float64 `json:"sample_every_s"`
	Quick       bool    `json:"quick"`

	warmup, sampleFor time.Duration
}

func scalingParamsFromEnv(t *testing.T) scalingParams {
	p := scalingParams{Agents: scalingAgents, Flood: scalingFlood, warmup: scalingWarmup, sampleFor: scalingSampleFor}
	if os.Getenv("STATSGATE_FLEET_SCALING_QUICK") == "1" {
		p.Quick, p.FixedWarmup = true, true
		p.warmup, p.sampleFor = 25*time.Second, 15*time.Second
	}
	atoi := func(env string, v *int) {
		if s := os.Getenv(env); s != "" {
			n, err := strconv.Atoi(s)
			require.NoError(t, err, env)
			require.Positive(t, n, env)
			*v = n
		}
	}
	duration := func(env string, v *time.Duration) bool {
		s := os.Getenv(env)
		if s == "" {
			return false
		}
		d, err := time.ParseDuration(s)
		require.NoError(t, err, env)
		require.Positive(t, d, env)
		*v = d
		return true
	}
	atoi("STATSGATE_FLEET_SCALING_AGENTS", &p.Agents)
	atoi("STATSGATE_FLEET_SCALING_FLOOD", &p.Flood)
	if duration("STATSGATE_FLEET_SCALING_WARMUP", &p.warmup) {
		p.FixedWarmup = true
	}
	duration("STATSGATE_FLEET_SCALING_SAMPLE", &p.sampleFor)
	p.ExportEvery = scalingExportEvery.Seconds()
	p.WarmupS, p.SampleForS, p.SampleEvery = p.warmup.Seconds(), p.sampleFor.Seconds(), scalingSampleEvery.Seconds()
	return p
}

// seriesPerAgent is an agent's OTLP series, as series_active counts them (a
// histogram is one).
func (p scalingParams) seriesPerAgent() int { return p.Flood + 6 }

// distinct is the workload's distinct series.
func (p scalingParams) distinct() int { return p.Agents * p.seriesPerAgent() }

// warmupOf is how long c's agents export before the sampling. Without
// departure a replica holds every agent that exported to it within
// metric_expiration: its holdings grow until that window is full of
// connections (the first connection's series expired), and a shorter run
// would show fewer copies than the fleet keeps for good.
func (p scalingParams) warmupOf(c scalingConfig) time.Duration {
	if c.Departure || p.FixedWarmup {
		return p.warmup
	}
	steady := c.expiration + c.sweep() + c.connectionAge*11/10 + c.grace
	return max(p.warmup, steady)
}

// scalingConfig is one fleet measured.
type scalingConfig struct {
	Name        string   `json:"name"`
	Replicas    int      `json:"replicas"`
	Departure   bool     `json:"departure"`
	Alternative string   `json:"alternative,omitempty"`
	Sets        []string `json:"sets"`
	// The settings the sets give.
	ExpirationS    float64 `json:"metric_expiration_s"`
	ConnectionAgeS float64 `json:"max_connection_age_s"`
	GraceS         float64 `json:"max_connection_age_grace_s"`

	expiration, connectionAge, grace time.Duration
}

func (c scalingConfig) sweep() time.Duration { return max(minSweep, c.expiration/4) }

// The alternatives to departure, at 3 replicas.
const (
	altLearnedExpiry = "expiry learned from the export interval (emulated: metric_expiration 3s = 3 export intervals)"
	altAge60s        = "max_connection_age 60s"
	altAge2m         = "max_connection_age 2m (shipped default)"
)

func newScalingConfig(replicas int, departure bool, alternative string, age, grace, expiration time.Duration) scalingConfig {
	c := scalingConfig{Replicas: replicas, Departure: departure, Alternative: alternative,
		expiration: expiration, connectionAge: age, grace: grace,
		ExpirationS: expiration.Seconds(), ConnectionAgeS: age.Seconds(), GraceS: grace.Seconds()}
	onOff := "off"
	if departure {
		onOff = "on"
	}
	c.Name = fmt.Sprintf("%d replicas, departure %s", replicas, onOff)
	if alternative != "" {
		c.Name += ", " + strings.TrimSuffix(strings.Split(alternative, " (")[0], " ")
	}
	// Only what differs from the shipped config is set.
	if age != shippedConnectionAge || grace != shippedConnectionGrace {
		c.Sets = append(c.Sets,
			"receivers::otlp::protocols::grpc::keepalive::server_parameters::max_connection_age="+age.String(),
			"receivers::otlp::protocols::grpc::keepalive::server_parameters::max_connection_age_grace="+grace.String())
	}
	if expiration != shippedExpiration {
		c.Sets = append(c.Sets, "exporters::agentprometheus::metric_expiration="+expiration.String())
	}
	return c
}

func scalingConfigs() []scalingConfig {
	var cs []scalingConfig
	for _, n := range []int{2, 3, 5} {
		for _, departure := range []bool{true, false} {
			cs = append(cs, newScalingConfig(n, departure, "", scalingConnectionAge, scalingConnectionGrace, shippedExpiration))
		}
	}
	// Every agent exports every second: three intervals is the expiry a
	// gateway that learned each resource's interval would use.
	cs = append(cs,
		newScalingConfig(3, false, altLearnedExpiry, scalingConnectionAge, scalingConnectionGrace, 3*scalingExportEvery),
		newScalingConfig(3, false, altAge60s, time.Minute, scalingConnectionGrace, shippedExpiration),
		newScalingConfig(3, false, altAge2m, shippedConnectionAge, shippedConnectionGrace, shippedExpiration))
	return cs
}

// scalingTelemetry is one read of a replica's own telemetry.
type scalingTelemetry struct {
	SeriesActive float64 `json:"series_active"`
	HeapBytes    float64 `json:"heap_alloc_bytes"`
	RSSBytes     float64 `json:"rss_bytes"`
	ClaimsSent   float64 `json:"claims_sent"`
	Created      float64 `json:"series_created"`
	Departed     float64 `json:"series_removed_departed"`
	Expired      float64 `json:"series_removed_expired"`
	Members      float64 `json:"fleet_members,omitempty"`
}

// The collector's own metrics the run reads (v0.164's names, without _total).
const (
	telSeriesActive = "otelcol_exporter_agentprometheus_series_active"
	telHeap         = "otelcol_process_runtime_heap_alloc_bytes"
	telRSS          = "otelcol_process_memory_rss"
	telClaims       = "otelcol_exporter_agentprometheus_fleet_claims_sent"
	telCreated      = "otelcol_exporter_agentprometheus_series_created"
	telRemoved      = "otelcol_exporter_agentprometheus_series_removed"
	telMembers      = "otelcol_exporter_agentprometheus_fleet_members"
)

func readScalingTelemetry(r *replica) (scalingTelemetry, error) {
	fams, _, _, err := gatewaytest.Scrape("http://" + r.telemetry + "/metrics")
	if err != nil {
		return scalingTelemetry{}, fmt.Errorf("%s telemetry: %w", r.name, err)
	}
	var tel scalingTelemetry
	// These are always there; a missing one is a renamed metric.
	for name, v := range map[string]*float64{telSeriesActive: &tel.SeriesActive, telHeap: &tel.HeapBytes, telRSS: &tel.RSSBytes, telCreated: &tel.Created} {
		var ok bool
		if *v, ok = gatewaytest.Value(fams, name, nil); !ok {
			return tel, fmt.Errorf("%s telemetry: no %s", r.name, name)
		}
	}
	// Counters without a point yet are absent: zero.
	tel.ClaimsSent, _ = gatewaytest.Value(fams, telClaims, nil)
	tel.Departed, _ = gatewaytest.Value(fams, telRemoved, map[string]string{"reason": "departed"})
	tel.Expired, _ = gatewaytest.Value(fams, telRemoved, map[string]string{"reason": "expired"})
	tel.Members, _ = gatewaytest.Value(fams, telMembers, nil)
	return tel, nil
}

// scrapeAgentSeries returns the agents' series a replica serves, each keyed
// by name and labels; target_info, the agent's resource and not a series
// series_active counts, is left out.
func scrapeAgentSeries(r *replica) (map[string]struct{}, error) {
	fams, _, _, err := gatewaytest.Scrape("http://" + r.metrics + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("%s /metrics: %w", r.name, err)
	}
	out := map[string]struct{}{}
	for name, mf := range fams {
		if name == "target_info" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if gatewaytest.LabelValue(m, "job") == scalingJob {
				out[seriesID(name, m)] = struct{}{}
			}
		}
	}
	return out, nil
}

func seriesID(name string, m *dto.Metric) string {
	labels := make([]string, 0, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		labels = append(labels, l.GetName()+"="+l.GetValue())
	}
	slices.Sort(labels)
	return name + "{" + strings.Join(labels, "\xff") + "}"
}

// scalingReplicaSample is one replica at one sample.
type scalingReplicaSample struct {
	Replica string `json:"replica"`
	scalingTelemetry
	// Scraped is the agents' series /metrics served.
	Scraped int `json:"series_scraped"`
}

// scalingSample is the fleet at one moment of the sampling.
type scalingSample struct {
	AtS float64 `json:"t_s"` // since the agents started
	// Distinct is the union of the series the replicas served, Held their sum.
	Distinct int     `json:"distinct"`
	Held     int     `json:"held"`
	Copies   float64 `json:"copies"`
	// CopiesActive is the replicas' series_active summed over the
	// workload's distinct series.
	CopiesActive float64                `json:"copies_series_active"`
	Replicas     []scalingReplicaSample `json:"replicas"`
}

// scalingTrace is the replicas' telemetry during the warm-up.
type scalingTrace struct {
	AtS      float64            `json:"t_s"`
	Replicas []scalingTelemetry `json:"replicas"`
}

// scalingSummary is a configuration's figures.
type scalingSummary struct {
	WarmupS float64 `json:"warmup_s"`
	Samples int     `json:"samples"`
	// Copies per series over the samples.
	CopiesMean       float64 `json:"copies_mean"`
	CopiesMin        float64 `json:"copies_min"`
	CopiesMax        float64 `json:"copies_max"`
	CopiesActiveMean float64 `json:"copies_series_active_mean"`
	// Distinct series served, fewest and most over the samples, and the
	// workload's.
	DistinctMin      int `json:"distinct_min"`
	DistinctMax      int `json:"distinct_max"`
	DistinctWorkload int `json:"distinct_workload"`
	// Per replica: series_active over the samples and replicas; memory, the
	// mean of the replicas' means and the highest replica's mean.
	SeriesPerReplica float64 `json:"series_per_replica_mean"`
	HeapMiB          float64 `json:"heap_mib_mean"`
	HeapMiBMax       float64 `json:"heap_mib_max_replica"`
	RSSMiB           float64 `json:"rss_mib_mean"`
	RSSMiBMax        float64 `json:"rss_mib_max_replica"`
	// Rates over RatesOverS seconds, summed over the replicas.
	RatesOverS     float64 `json:"rates_over_s"`
	ClaimsPerMin   float64 `json:"claims_per_min"`
	CreatedPerSec  float64 `json:"series_created_per_s"`
	DepartedPerSec float64 `json:"series_departed_per_s"`
	ExpiredPerSec  float64 `json:"series_expired_per_s"`
	// From the agents' exports and haproxy's connection log: how often an
	// agent's exports changed replica, and how many replicas each agent
	// exported to within metric_expiration of a sample (what a replica
	// without departure holds), averaged over agents and samples.
	MovesPerAgentMin  float64 `json:"moves_per_agent_per_min"`
	VisitedWithinExpy float64 `json:"replicas_exported_to_within_expiration"`
	ExportsFailed     int     `json:"exports_failed"`
}

// scalingResult is one configuration's run.
type scalingResult struct {
	Config  scalingConfig   `json:"config"`
	Summary scalingSummary  `json:"summary"`
	Samples []scalingSample `json:"samples"`
	Trace   []scalingTrace  `json:"trace"`
}

// TestFleetScaling measures, for 2, 3 and 5 replicas with departure on and
// off and for the alternatives to departure, how many copies of each agent
// series the replicas hold and what that costs each replica in memory,
// and writes bench/results/fleet-scaling.{md,json} and
// docs/fleet-scaling.svg. STATSGATE_FLEET_SCALING=1; not in make test.
func TestFleetScaling(t *testing.T) {
	if os.Getenv("STATSGATE_FLEET_SCALING") != "1" {
		t.Skip("set STATSGATE_FLEET_SCALING=1 (with STATSGATE_BINARY and STATSGATE_HAPROXY) to measure the fleet's scaling")
	}
	gateway, haproxy := os.Getenv("STATSGATE_BINARY"), os.Getenv("STATSGATE_HAPROXY")
	for env, p := range map[string]string{"STATSGATE_BINARY": gateway, "STATSGATE_HAPROXY": haproxy} {
		require.NotEmpty(t, p, "%s is not set", env)
		fi, err := os.Stat(p)
		require.NoError(t, err, "%s=%s", env, p)
		require.False(t, fi.IsDir(), "%s=%s is a directory", env, p)
	}
	p := scalingParamsFromEnv(t)
	agentBin := proctest.GoBuild(t, "../..", "./cmd/otlpagent", t.TempDir())
	began := time.Now()

	configs := scalingConfigs()
	var results []*scalingResult
	for _, c := range configs {
		t.Run(c.Name, func(t *testing.T) {
			t.Logf("%s: --set %s; agents export for %v, then %v of samples", c.Name, strings.Join(c.Sets, " --set "), p.warmupOf(c), p.sampleFor)
			r := runScaling(t, p, c, gateway, haproxy, agentBin)
			results = append(results, r)
			s := r.Summary
			t.Logf("%s: copies %.2f (%.2f–%.2f), series_active copies %.2f, distinct %d–%d of %d; per replica %.0f series, heap %.1f MiB, RSS %.1f MiB; claims %.0f/min, created %.0f/s, departed %.0f/s, expired %.0f/s; moves %.2f per agent-minute, replicas exported to within metric_expiration %.2f",
				c.Name, s.CopiesMean, s.CopiesMin, s.CopiesMax, s.CopiesActiveMean, s.DistinctMin, s.DistinctMax, s.DistinctWorkload,
				s.SeriesPerReplica, s.HeapMiB, s.RSSMiB, s.ClaimsPerMin, s.CreatedPerSec, s.DepartedPerSec, s.ExpiredPerSec, s.MovesPerAgentMin, s.VisitedWithinExpy)
		})
	}

	// Departure is what the fleet is for: fewer copies than the same
	// replicas alone.
	byName := map[string]*scalingResult{}
	for _, r := range results {
		byName[r.Config.Name] = r
	}
	for _, n := range []int{2, 3, 5} {
		on, off := byName[fmt.Sprintf("%d replicas, departure on", n)], byName[fmt.Sprintf("%d replicas, departure off", n)]
		if on != nil && off != nil {
			assert.Less(t, on.Summary.CopiesMean, off.Summary.CopiesMean, "%d replicas: copies per series with departure vs without", n)
		}
	}

	out := scalingOutputs(t, p, len(results) == len(configs))
	writeScalingResults(t, p, results, out, time.Since(began))
}

// runScaling runs one configuration: its replicas, haproxy and the agents,
// and the samples.
func runScaling(t *testing.T, p scalingParams, c scalingConfig, gateway, haproxy, agentBin string) *scalingResult {
	dir := scalingWorkDir(t, c)
	replicas := make([]*replica, c.Replicas)
	for i := range replicas {
		replicas[i] = newReplica(t, fmt.Sprintf("replica-%d", i+1), gateway, dir, c.Sets...)
	}
	if c.Departure {
		formFleet(t, dir, replicas)
	}
	for _, r := range replicas {
		r.start(t)
	}
	if c.Departure {
		proctest.Poll(t, 30*time.Second, "every replica sees the whole fleet", func() error {
			for _, r := range replicas {
				tel, err := readScalingTelemetry(r)
				if err != nil {
					return err
				}
				if int(tel.Members) != len(replicas) {
					return fmt.Errorf("%s sees %v members", r.name, tel.Members)
				}
			}
			return nil
		})
	}
	lb := startHAProxy(t, haproxy, dir, replicas)
	manifest := filepath.Join(dir, "agents.json")
	agents := proctest.Start(t, dir, "otlpagent", nil, agentBin,
		"--endpoint", lb.grpc, "--protocol", "grpc", "--temporality", "cumulative",
		"--agents", strconv.Itoa(p.Agents), "--flood", strconv.Itoa(p.Flood),
		"--service", scalingJob, "--instance-prefix", scalingJob,
		"--export-interval", scalingExportEvery.String(), "--manifest", manifest)
	began := time.Now()
	since := func(at time.Time) float64 { return at.Sub(began).Seconds() }
	running := func() {
		t.Helper()
		require.NoError(t, agents.Running())
		for _, r := range replicas {
			require.NoError(t, r.proc.Running())
		}
	}

	res := &scalingResult{Config: c}
	warmup := p.warmupOf(c)
	ratesFrom := min(scalingRatesFrom, warmup/2)
	var mark []scalingTelemetry
	var markAt time.Time
	everHeld := make([]float64, len(replicas))
	for at := began.Add(scalingTraceEvery); at.Before(began.Add(warmup)); at = at.Add(scalingTraceEvery) {
		time.Sleep(time.Until(at))
		running()
		tels := make([]scalingTelemetry, len(replicas))
		for i, r := range replicas {
			var err error
			tels[i], err = readScalingTelemetry(r)
			require.NoError(t, err)
			everHeld[i] = max(everHeld[i], tels[i].SeriesActive)
		}
		res.Trace = append(res.Trace, scalingTrace{AtS: since(time.Now()), Replicas: tels})
		if mark == nil && time.Since(began) >= ratesFrom {
			mark, markAt = tels, time.Now()
		}
	}

	sampleStart := time.Now()
	var last []scalingTelemetry
	var lastAt time.Time
	for at := sampleStart; !at.After(sampleStart.Add(p.sampleFor)); at = at.Add(scalingSampleEvery) {
		time.Sleep(time.Until(at))
		running()
		s := takeScalingSample(t, replicas, p)
		s.AtS = since(at)
		res.Samples = append(res.Samples, s)
		last, lastAt = make([]scalingTelemetry, len(replicas)), time.Now()
		for i, rs := range s.Replicas {
			last[i] = rs.scalingTelemetry
			everHeld[i] = max(everHeld[i], rs.SeriesActive)
		}
		if mark == nil {
			mark, markAt = last, lastAt
		}
	}
	sampledUntil := time.Now()

	// The agents flush and write what the gateway acknowledged.
	require.NoError(t, agents.Signal(syscall.SIGTERM))
	require.NoError(t, agents.Wait(60*time.Second), "otlpagent:\n%s", proctest.Tail(agents.Log, 30))
	var m agentmanifest.OTLP
	require.NoError(t, agentmanifest.Read(manifest, &m))

	res.Summary = summarizeScaling(p, c, res.Samples)
	res.Summary.WarmupS = warmup.Seconds()
	sum := func(tels []scalingTelemetry, f func(scalingTelemetry) float64) float64 {
		var s float64
		for _, tel := range tels {
			s += f(tel)
		}
		return s
	}
	if over := lastAt.Sub(markAt).Seconds(); over > 0 {
		rate := func(f func(scalingTelemetry) float64) float64 { return (sum(last, f) - sum(mark, f)) / over }
		res.Summary.RatesOverS = over
		res.Summary.ClaimsPerMin = 60 * rate(func(tel scalingTelemetry) float64 { return tel.ClaimsSent })
		res.Summary.CreatedPerSec = rate(func(tel scalingTelemetry) float64 { return tel.Created })
		res.Summary.DepartedPerSec = rate(func(tel scalingTelemetry) float64 { return tel.Departed })
		res.Summary.ExpiredPerSec = rate(func(tel scalingTelemetry) float64 { return tel.Expired })
	}
	agentMoves(t, &res.Summary, m, lb.log, c, res.Samples, began, sampledUntil)

	// The scenario happened: every agent exported throughout, every series
	// arrived, every replica held some, agents moved, and the fleet claimed
	// and departed them (or, alone, never did).
	require.Len(t, m.Agents, p.Agents)
	for _, a := range m.Agents {
		assert.NotEmpty(t, a.Exports, "%s: no export acknowledged", a.InstanceID)
		assert.Empty(t, a.Failed, "%s: exports failed", a.InstanceID)
	}
	assert.Equal(t, p.distinct(), res.Summary.DistinctMax, "the agents' distinct series, as served: the most in a sample vs the workload's")
	if res.Summary.DistinctMin < p.distinct() {
		t.Logf("%s: a sample found %d of the %d series served by no replica (an agent between replicas, or its series expired before it came back)",
			c.Name, p.distinct()-res.Summary.DistinctMin, p.distinct())
	}
	for i, r := range replicas {
		assert.Positive(t, everHeld[i], "%s never held a series", r.name)
	}
	run := sampledUntil.Sub(began)
	if c.connectionAge*11/10+c.grace < run {
		assert.Positive(t, res.Summary.MovesPerAgentMin, "agents moved between replicas (max_connection_age %v, %v run)", c.connectionAge, run.Round(time.Second))
	}
	departed := sum(last, func(tel scalingTelemetry) float64 { return tel.Departed })
	claims := sum(last, func(tel scalingTelemetry) float64 { return tel.ClaimsSent })
	if c.Departure {
		assert.Positive(t, claims, "claims sent")
		assert.Positive(t, departed, "series departed")
	} else {
		assert.Zero(t, departed, "series departed from replicas that are not a fleet")
	}
	return res
}

// takeScalingSample reads every replica at once (an agent that moves
// between two sequential reads would be counted twice, or not at all).
func takeScalingSample(t *testing.T, replicas []*replica, p scalingParams) scalingSample {
	t.Helper()
	sets := make([]map[string]struct{}, len(replicas))
	s := scalingSample{Replicas: make([]scalingReplicaSample, len(replicas))}
	errs := make([]error, len(replicas))
	var wg sync.WaitGroup
	for i, r := range replicas {
		wg.Go(func() {
			tel, err := readScalingTelemetry(r)
			if err == nil {
				sets[i], err = scrapeAgentSeries(r)
			}
			s.Replicas[i] = scalingReplicaSample{Replica: r.name, scalingTelemetry: tel, Scraped: len(sets[i])}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	union := make(map[string]struct{}, p.distinct())
	var active float64
	for i, set := range sets {
		s.Held += len(set)
		for k := range set {
			union[k] = struct{}{}
		}
		active += s.Replicas[i].SeriesActive
	}
	s.Distinct = len(union)
	if s.Distinct > 0 {
		s.Copies = float64(s.Held) / float64(s.Distinct)
	}
	s.CopiesActive = active / float64(p.distinct())
	return s
}

func summarizeScaling(p scalingParams, c scalingConfig, samples []scalingSample) scalingSummary {
	s := scalingSummary{Samples: len(samples), DistinctWorkload: p.distinct(), CopiesMin: math.Inf(1), DistinctMin: math.MaxInt}
	heap := make([]float64, c.Replicas)
	rss := make([]float64, c.Replicas)
	for _, smp := range samples {
		s.CopiesMean += smp.Copies
		s.CopiesActiveMean += smp.CopiesActive
		s.CopiesMin, s.CopiesMax = math.Min(s.CopiesMin, smp.Copies), math.Max(s.CopiesMax, smp.Copies)
		s.DistinctMin, s.DistinctMax = min(s.DistinctMin, smp.Distinct), max(s.DistinctMax, smp.Distinct)
		for i, r := range smp.Replicas {
			s.SeriesPerReplica += r.SeriesActive
			heap[i] += r.HeapBytes
			rss[i] += r.RSSBytes
		}
	}
	if len(samples) == 0 {
		return s
	}
	n := float64(len(samples))
	s.CopiesMean /= n
	s.CopiesActiveMean /= n
	s.SeriesPerReplica /= n * float64(c.Replicas)
	for i := range heap {
		h, r := heap[i]/n/(1<<20), rss[i]/n/(1<<20)
		s.HeapMiB += h / float64(c.Replicas)
		s.RSSMiB += r / float64(c.Replicas)
		s.HeapMiBMax, s.RSSMiBMax = math.Max(s.HeapMiBMax, h), math.Max(s.RSSMiBMax, r)
	}
	return s
}

// agentMoves puts each agent's exports on the replicas that took them
// (haproxy's connection log, connlog_test.go) and counts the moves, and the
// replicas each agent exported to within metric_expiration before each
// sample: the copies a fleet without departure holds of it.
func agentMoves(t *testing.T, s *scalingSummary, m agentmanifest.OTLP, haproxyLog string, c scalingConfig, samples []scalingSample, began, until time.Time) {
	for _, a := range m.Agents {
		s.ExportsFailed += len(a.Failed)
	}
	replicas, err := grpcExportReplicas(m, haproxyLog)
	if !assert.NoError(t, err, "putting the agents' exports on replicas") {
		return
	}
	var moves int
	var visited float64
	for i, a := range m.Agents {
		for j := 1; j < len(a.Exports); j++ {
			if replicas[i][j] != replicas[i][j-1] {
				moves++
			}
		}
		for _, smp := range samples {
			at := began.Add(time.Duration(smp.AtS * float64(time.Second)))
			seen := map[string]bool{}
			for j, e := range a.Exports {
				if e.At.After(at.Add(-c.expiration)) && !e.At.After(at) {
					seen[replicas[i][j]] = true
				}
			}
			visited += float64(len(seen))
		}
	}
	s.MovesPerAgentMin = float64(moves) / float64(len(m.Agents)) / until.Sub(began).Minutes()
	if len(samples) > 0 {
		s.VisitedWithinExpy = visited / float64(len(m.Agents)*len(samples))
	}
}

// scalingWorkDir holds a configuration's logs: the test's temporary
// directory, or under STATSGATE_FLEET_SCALING_KEEP to keep them.
func scalingWorkDir(t *testing.T, c scalingConfig) string {
	keep := os.Getenv("STATSGATE_FLEET_SCALING_KEEP")
	if keep == "" {
		return t.TempDir()
	}
	dir := filepath.Join(keep, strings.NewReplacer(" ", "-", ",", "", "(", "", ")", "").Replace(c.Name))
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	t.Logf("logs in %s", dir)
	return dir
}

// scalingOut is where the results go.
type scalingOut struct{ md, json, svg string }

// scalingOutputs: the repository's results after a full, passing run of
// every configuration; a quick or partial one's go to
// STATSGATE_FLEET_SCALING_OUT, or the temporary directory, so that they do
// not replace the published figures.
func scalingOutputs(t *testing.T, p scalingParams, all bool) scalingOut {
	dir := os.Getenv("STATSGATE_FLEET_SCALING_OUT")
	if dir == "" && all && !p.Quick && !t.Failed() {
		return scalingOut{md: "../../bench/results/fleet-scaling.md", json: "../../bench/results/fleet-scaling.json", svg: "../../docs/fleet-scaling.svg"}
	}
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "fleet-scaling")
		t.Logf("a quick, partial or failed run: results go to %s, not to bench/results", dir)
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return scalingOut{md: filepath.Join(dir, "fleet-scaling.md"), json: filepath.Join(dir, "fleet-scaling.json"), svg: filepath.Join(dir, "fleet-scaling.svg")}
}

// scalingMachine describes where the run ran.
type scalingMachine struct {
	Date     string `json:"date"`
	Cores    int    `json:"cores"`
	MemGiB   int    `json:"memory_gib"`
	Go       string `json:"go"`
	Binary   string `json:"binary"`
	BinaryAt string `json:"binary_built"`
	Commit   string `json:"commit"`
}

func scalingMachineOf(binary string) scalingMachine {
	m := scalingMachine{Date: time.Now().UTC().Format("2006-01-02 15:04 MST"), Cores: runtime.NumCPU(), Go: runtime.Version(), Binary: filepath.Base(binary)}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		if _, err := fmt.Sscanf(strings.SplitN(string(b), "\n", 2)[0], "MemTotal: %d kB", &kb); err == nil {
			m.MemGiB = int(math.Round(float64(kb) / (1 << 20)))
		}
	}
	if fi, err := os.Stat(binary); err == nil {
		m.BinaryAt = fi.ModTime().UTC().Format("2006-01-02 15:04 MST")
	}
	if out, err := proctest.Run("git", "-C", "../..", "rev-parse", "--short", "HEAD"); err == nil {
		m.Commit = strings.TrimSpace(out)
	}
	return m
}

func writeScalingResults(t *testing.T, p scalingParams, results []*scalingResult, out scalingOut, took time.Duration) {
	machine := scalingMachineOf(os.Getenv("STATSGATE_BINARY"))
	b, err := json.MarshalIndent(struct {
		Machine        scalingMachine   `json:"machine"`
		Params         scalingParams    `json:"params"`
		RunS           float64          `json:"run_s"`
		Configurations []*scalingResult `json:"configurations"`
	}{machine, p, took.Seconds(), results}, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(out.json, append(b, '\n'), 0o644))
	md := scalingMarkdown(p, machine, results, took)
	require.NoError(t, os.WriteFile(out.md, []byte(md), 0o644))

	lines := []scalingChartLine{
		{Label: "departure on (fleet)", Color: "#1f77b4", Marker: "circle"},
		{Label: "departure off (replicas alone)", Color: "#d62728", Marker: "square"},
	}
	for _, r := range results {
		if r.Config.Alternative != "" {
			continue
		}
		i := 1
		if r.Config.Departure {
			i = 0
		}
		lines[i].Points = append(lines[i].Points, scalingChartPoint{Replicas: r.Config.Replicas, Copies: r.Summary.CopiesMean, HeapMiB: r.Summary.HeapMiB})
	}
	subtitle := fmt.Sprintf("%d agents × %d series (%s distinct) over OTLP/gRPC, round robin, max_connection_age %v; means over the samples; %d-core machine, noisy",
		p.Agents, p.seriesPerAgent(), thousands(p.distinct()), scalingConnectionAge, machine.Cores)
	svg := scalingChart("Fleet scaling: copies per series and Go heap per replica", subtitle, lines)
	require.NoError(t, os.WriteFile(out.svg, []byte(svg), 0o644))
	t.Logf("wrote %s, %s and %s\n%s", out.md, out.json, out.svg, md)
}

func scalingMarkdown(p scalingParams, m scalingMachine, results []*scalingResult, took time.Duration) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# Fleet scaling: copies per series and memory per replica\n\n")
	w("Generated by `TestFleetScaling` (test/fleet/scaling_test.go) on %s (%d cores, %d GiB, %s), distro binary built %s, commit %s; the whole run took %v.\n",
		m.Date, m.Cores, m.MemGiB, m.Go, m.BinaryAt, m.Commit, took.Round(time.Second))
	w("**2-core build machine, noisy: compare ratios.** The agents, haproxy and every replica share its two cores.\n\n")
	w("Each configuration: N replicas of the built distro on `testdata/gateway.yaml` (the shipped config) behind haproxy, whose OTLP/gRPC frontend balances connections round robin; ")
	w("%d agents (one `cmd/otlpagent`, cumulative, an export every %v), each with %d series (a counter and a histogram of 3 kinds, and a counter with %d attribute values): **%s distinct series**. ",
		p.Agents, scalingExportEvery, p.seriesPerAgent(), p.Flood, thousands(p.distinct()))
	w("`max_connection_age` %v (grace %v) makes every agent reconnect, and so move, every ~%v; everything else is the shipped config (metric_expiration 5m, fleet::claim_interval 15s). ",
		scalingConnectionAge, scalingConnectionGrace, scalingConnectionAge)
	w("Departure on: the replicas form a fleet (`exporters::agentprometheus::fleet`); off: each runs alone, as before the fleet.\n\n")
	w("The agents export for the warm-up (%v; without departure until the replicas' holdings are steady: metric_expiration + a connection's age, so that every replica an agent visited within metric_expiration holds it), ", p.warmup)
	w("then every replica is read every %v for %v: its /metrics (the agents' series, keyed by name and labels) and its own telemetry.\n\n", scalingSampleEvery, p.sampleFor)

	w("| replicas | departure | alternative | measured after | copies per series: mean (max) | series per replica | heap per replica | RSS per replica | claims/min | series created/s |\n")
	w("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		c, s := r.Config, r.Summary
		onOff := "off"
		if c.Departure {
			onOff = "**on**"
		}
		alt := "—"
		if c.Alternative != "" {
			alt = c.Alternative
		}
		w("| %d | %s | %s | %v | %.2f (%.2f) | %s | %.1f MiB | %.1f MiB | %.0f | %.0f |\n",
			c.Replicas, onOff, alt, time.Duration(s.WarmupS*float64(time.Second)), s.CopiesMean, s.CopiesMax,
			thousands(int(math.Round(s.SeriesPerReplica))), s.HeapMiB, s.RSSMiB, s.ClaimsPerMin, s.CreatedPerSec)
	}
	w("\n- *copies per series*: the series the replicas serve, summed, over the distinct series they serve together (%s); mean and max over the samples.\n", thousands(p.distinct()))
	w("- *series per replica*: `otelcol_exporter_agentprometheus_series_active`, mean over the samples and replicas. *heap*: `otelcol_process_runtime_heap_alloc_bytes` (Go HeapAlloc, live and not yet collected), *RSS*: `otelcol_process_memory_rss`; each the mean of the replicas' means over the samples.\n")
	w("- *claims/min* (`otelcol_exporter_agentprometheus_fleet_claims_sent`) and *series created/s* (`..._series_created`): summed over the replicas, from %v after the agents started (past their first connection) to the last sample.\n", scalingRatesFrom)
	w("- *%s*: the exporter does not learn an interval; every agent exports every %v, so `metric_expiration` 3s stands for it.\n", altLearnedExpiry, scalingExportEvery)
	w("- *%s*: the shipped `max_connection_age` and grace (30s); the other rows set the grace to %v.\n\n", altAge2m, scalingConnectionGrace)

	w("Per configuration, what explains the copies:\n\n")
	w("| configuration | moves per agent-minute | replicas an agent exported to within metric_expiration | copies (series_active) | distinct series served: min–max | heap, highest replica | RSS, highest replica | series departed/s | series expired/s |\n")
	w("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		s := r.Summary
		w("| %s | %.2f | %.2f | %.2f | %s–%s | %.1f MiB | %.1f MiB | %.0f | %.0f |\n", r.Config.Name, s.MovesPerAgentMin, s.VisitedWithinExpy, s.CopiesActiveMean,
			thousands(s.DistinctMin), thousands(s.DistinctMax), s.HeapMiBMax, s.RSSMiBMax, s.DepartedPerSec, s.ExpiredPerSec)
	}
	w("\n*Moves*: exports that another replica took than the one before (the agents' exports put on replicas through haproxy's connection log). ")
	w("*Replicas exported to within metric_expiration*: per agent and sample, averaged: what a replica without departure holds, so the copies departure off should show. ")
	w("*Distinct min* below the workload's: at some sample no replica served some series.\n\n")
	w("Raw samples: `bench/results/fleet-scaling.json`; plot: `docs/fleet-scaling.svg`. Regenerate with\n\n")
	w("```sh\nSTATSGATE_FLEET_SCALING=1 STATSGATE_BINARY=$PWD/_build/otelcol-statsgate STATSGATE_HAPROXY=$(command -v haproxy) \\\n  go test -count=1 -v -timeout 90m -run TestFleetScaling ./test/fleet/\n```\n")
	return b.String()
}

// thousands writes n with thousands separators: 16,240.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
