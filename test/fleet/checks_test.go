package fleet

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/internal/agentmanifest"
	"github.com/statsgate/statsgate/test/internal/promtest"
)

// The checks of what Prometheus stored against what the agents counted.
// Each takes the test, which fails on what keeps a check from running (a
// query that fails), and c, which is told what does not match: the test
// itself, or findings when a negative control expects the checks to fail.

// findings collects what the checks found wrong instead of failing a test.
type findings struct{ msgs []string }

func (f *findings) Errorf(format string, args ...any) {
	f.msgs = append(f.msgs, oneLine(fmt.Sprintf(format, args...)))
}

// oneLine puts a testify failure on one line, its message first and then
// what did not hold, without its trace: the findings a negative control logs
// must not read as failures of the control.
func oneLine(s string) string {
	var field string
	parts := map[string][]string{}
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		for _, name := range []string{"Error Trace:", "Error:", "Test:", "Messages:"} {
			if rest, ok := strings.CutPrefix(l, name); ok {
				field, l = name, rest
				break
			}
		}
		parts[field] = append(parts[field], strings.Fields(l)...)
	}
	msg, what := strings.Join(parts["Messages:"], " "), strings.Join(parts["Error:"], " ")
	if msg == "" || what == "" {
		return strings.Join(strings.Fields(s), " ")
	}
	return msg + " (" + what + ")"
}

// checkOTLPGroup compares, per agent and kind, the counter and every
// histogram series Prometheus stored with what the agent counted.
func checkOTLPGroup(t *testing.T, c assert.TestingT, prom *promtest.Server, g *otlpGroup, m agentmanifest.OTLP, restarts []restart, window time.Duration, at time.Time) {
	delta := g.temporality == "delta"
	for _, a := range m.Agents {
		// An export fails for good only when the replica it went to was
		// killed while answering; with delta temporality what it carried
		// is lost on the way, and the gateway is held to what it acknowledged.
		for _, f := range a.Failed {
			killed := slices.ContainsFunc(restarts, func(r restart) bool {
				return r.killed && f.After(r.down.Add(-exportTimeout)) && f.Before(r.up)
			})
			assert.True(c, killed, "%s: an export failed at %v, when no replica was killed", a.InstanceID, f.Format(time.StampMilli))
		}
		if !delta || len(a.Failed) == 0 {
			assert.Equal(c, a.Counted, a.Acked, "%s: what the agent counted and what the gateway acknowledged", a.InstanceID)
		}
		lost := lostAtKill(a, m.Bounds, restarts)
		moves := movesOf(a, restarts)
		for _, v := range a.Acked {
			sel := fmt.Sprintf(`{job=%q, instance=%q, kind=%q}`, g.name, a.InstanceID, v.Kind)
			want := map[string]float64{
				"fleet_operations_total":       float64(v.Operations),
				"fleet_duration_seconds_count": float64(v.Count),
				"fleet_duration_seconds_sum":   v.Sum,
			}
			for le, c := range cumulativeBuckets(m.Bounds, v.Buckets) {
				want["fleet_duration_seconds_bucket le="+le] = c
			}
			series, err := prom.Raw(sel, window, at)
			require.NoError(t, err)
			got := map[string]counterRun{}
			for _, s := range series {
				name := s.Metric["__name__"]
				if le, ok := s.Metric["le"]; ok {
					// Prometheus 3 stores le as a float ("1.0" for "1").
					bound, err := strconv.ParseFloat(le, 64)
					require.NoError(t, err)
					name += " le=" + strconv.FormatFloat(bound, 'g', -1, 64)
				}
				if _, ok := want[name]; !ok {
					continue
				}
				if _, dup := got[name]; dup {
					c.Errorf("%s %s: two series", name, sel)
				}
				got[name] = summarize(s.Points)
			}
			for name, w := range want {
				r, ok := got[name]
				if !assert.True(c, ok, "%s%s: not stored", name, sel) {
					continue
				}
				what := fmt.Sprintf("%s %s%s", g.name, name, sel)
				if delta {
					l := lost[v.Kind][name]
					if l == 0 {
						assert.Equal(c, w, r.total, "%s: total", what)
					} else {
						assert.True(c, r.total <= w && r.total >= w-l, "%s: total %v, want %v less at most %v the killed replica may have lost", what, r.total, w, l)
						if name == "fleet_operations_total" {
							t.Logf("%s: the killed replica lost %v of at most %v", what, w-r.total, l)
						}
					}
					assert.LessOrEqual(c, r.resets, moves, "%s: resets, one at most per move (%d moves)", what, moves)
				} else {
					assert.Equal(c, w, r.total, "%s: total", what)
					assert.Zero(c, r.resets, "%s: resets of a cumulative counter", what)
				}
				maxGap := g.every + reconnectGap
				if delta {
					maxGap += 2 * scrapeInterval
				}
				assert.LessOrEqual(c, r.maxGap, maxGap, "%s: longest time between two samples: %v", what, r.maxGap)
			}
			if t.Failed() && delta {
				logTimeline(t, a, v.Kind, series, restarts)
			}
			if name := "fleet_operations_total"; got[name].total != 0 {
				t.Logf("%s %s: total %v, resets %d, moves %d, longest gap %v", g.name, sel, got[name].total, got[name].resets, moves, got[name].maxGap)
			}
		}
	}
}

// logTimeline shows, for a failing delta series, the agent's exports and
// the counter samples Prometheus stored, in time order.
func logTimeline(t *testing.T, a agentmanifest.OTLPAgent, kind string, series []promtest.Series, restarts []restart) {
	var lines []string
	for _, e := range a.Exports {
		for _, d := range e.Deltas {
			if d.Kind == kind {
				lines = append(lines, fmt.Sprintf("%s export  point %s +%d via %s", e.At.Format("15:04:05.000"), e.Point.Format("15:04:05.000"), d.Operations, e.Replica))
			}
		}
	}
	for _, s := range series {
		if s.Metric["__name__"] != "fleet_operations_total" {
			continue
		}
		for _, p := range s.Points {
			lines = append(lines, fmt.Sprintf("%s stored  %v", p.T.Format("15:04:05.000"), p.V))
		}
	}
	for _, r := range restarts {
		lines = append(lines, fmt.Sprintf("%s %s down (killed %v), up at %s", r.down.Format("15:04:05.000"), r.replica, r.killed, r.up.Format("15:04:05.000")))
	}
	slices.Sort(lines)
	t.Logf("%s %s:\n%s", a.InstanceID, kind, strings.Join(lines, "\n"))
}

// lostAtKill is, per kind and series, what an agent's deltas that the killed
// replica may have lost add up to: those it took after it had last been
// scraped, and the runs it began after the scrape two before that, which it
// had not shown with their value yet. Only the exports the killed replica
// took count: an HTTP agent's answer names its replica, a gRPC agent's
// connection does in haproxy's log (setGRPCReplicas).
func lostAtKill(a agentmanifest.OTLPAgent, bounds []float64, restarts []restart) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for _, r := range restarts {
		if !r.killed {
			continue
		}
		for _, e := range a.Exports {
			if !e.At.After(r.unshownSince) || e.At.After(r.down) || e.Replica != r.replica {
				continue
			}
			for _, d := range e.Deltas {
				if out[d.Kind] == nil {
					out[d.Kind] = map[string]float64{}
				}
				out[d.Kind]["fleet_operations_total"] += float64(d.Operations)
				out[d.Kind]["fleet_duration_seconds_count"] += float64(d.Count)
				out[d.Kind]["fleet_duration_seconds_sum"] += d.Sum
				for le, c := range cumulativeBuckets(bounds, d.Buckets) {
					out[d.Kind]["fleet_duration_seconds_bucket le="+le] += c
				}
			}
		}
	}
	return out
}

// movesOf counts the runs of an agent's exports beyond its first: an export
// that another replica took than the one before, or the same one restarted
// meanwhile.
func movesOf(a agentmanifest.OTLPAgent, restarts []restart) int { return len(moveTimes(a, restarts)) }

// moveTimes are the times of the exports that began a run on a replica
// after the agent's first.
func moveTimes(a agentmanifest.OTLPAgent, restarts []restart) []time.Time {
	var out []time.Time
	for i := 1; i < len(a.Exports); i++ {
		prev, cur := a.Exports[i-1], a.Exports[i]
		moved := cur.Replica != prev.Replica
		for _, r := range restarts {
			moved = moved || r.replica == cur.Replica && r.down.After(prev.At) && r.down.Before(cur.At)
		}
		if moved {
			out = append(out, cur.At)
		}
	}
	return out
}

// checkGRPCAgents compares the calls each gRPC agent's server and client
// counted with the call counts Prometheus stored, per agent, method and status.
func checkGRPCAgents(t *testing.T, c assert.TestingT, prom *promtest.Server, m agentmanifest.GRPC, window time.Duration, at time.Time) {
	for _, side := range []string{"server", "client"} {
		want := map[string]float64{}
		for _, a := range m.Agents {
			for _, c := range a.Calls {
				n := c.Server
				if side == "client" {
					n = c.Client
				}
				if n > 0 {
					want[seriesKey(a.InstanceID, c.Method, c.Status)] = float64(n)
				}
			}
		}
		series, err := prom.Raw(fmt.Sprintf(`rpc_%s_call_duration_seconds_count{job=%q}`, side, grpcService), window, at)
		require.NoError(t, err)
		got := map[string]float64{}
		for _, s := range series {
			k := seriesKey(s.Metric["instance"], s.Metric["rpc_method"], s.Metric["rpc_status_code"])
			r := summarize(s.Points)
			_, dup := got[k]
			assert.False(c, dup, "%s: two series for %s", side, k)
			got[k] = r.total
			assert.Zero(c, r.resets, "%s %s: resets", side, s.LabelString())
			assert.LessOrEqual(c, r.maxGap, maxGapGRPC, "%s %s: longest time between two samples: %v", side, s.LabelString(), r.maxGap)
		}
		assert.Equal(c, want, got, "%s calls per agent, method and status: Prometheus vs the agents' manifest", side)
	}
	scopes, err := prom.Floats(fmt.Sprintf(`count by (otel_scope_name) (rpc_server_call_duration_seconds_count{job=%q})`, grpcService), "otel_scope_name")
	require.NoError(t, err)
	assert.Len(c, scopes, 1, "the calls come from one of the two handlers, the other's dropped as duplicates: %v", scopes)
}

// checkNoDuplicates looks for an agent series stored under two label sets
// over the run: labels Prometheus adds when it does not honour the gateway's
// (exported_*, or the replica's address as instance), or series of one
// OTLP agent's metric that differ in which labels they have.
func checkNoDuplicates(t *testing.T, c assert.TestingT, prom *promtest.Server, replicas []*replica, window time.Duration, at time.Time) {
	all, err := prom.Raw(`{job=~"fleet-.*"}`, window, at)
	require.NoError(t, err)
	require.NotEmpty(t, all)
	addrs := map[string]bool{}
	for _, r := range replicas {
		addrs[r.metrics] = true
	}
	shapes := map[string]map[string]bool{}
	for _, s := range all {
		names := make([]string, 0, len(s.Metric))
		for name := range s.Metric {
			assert.False(c, strings.HasPrefix(name, "exported_"), "%s: Prometheus renamed a label of the gateway's", s.LabelString())
			names = append(names, name)
		}
		assert.False(c, addrs[s.Metric["instance"]], "%s: stored under the replica's instance", s.LabelString())
		if s.Metric["job"] == grpcService {
			// Which labels a call's series has depends on its status
			// (error.type); checkGRPCAgents finds its duplicates.
			continue
		}
		slices.Sort(names)
		key := s.Metric["__name__"] + " " + s.Metric["job"] + " " + s.Metric["instance"]
		if shapes[key] == nil {
			shapes[key] = map[string]bool{}
		}
		shapes[key][fmt.Sprint(names)] = true
	}
	for k, names := range shapes {
		assert.Len(c, names, 1, "%s is stored with different label names: %v", k, names)
	}
	t.Logf("%d series of the agents, each stored once", len(all))
}
