// Command dashboards writes statsgate.json, the Grafana dashboard of a
// statsgate fleet, from its definition here (grafana-foundation-sdk): `make
// dashboard` runs it, and `make test` fails when the committed JSON is not
// what it writes. A module of its own, so that the SDK stays out of the
// distro's go.mod.
//
// The panels read two kinds of series: the replicas' own telemetry (the
// collector's :8888, scraped as its own job, selected by $job and $replica),
// and the agents' series Prometheus scrapes from the replicas' /metrics,
// which keep the agents' job and instance (honor_labels).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// The replicas' telemetry, as every panel on it selects it.
const replicaSel = `job=~"$job", instance=~"$replica"`

// query is one target of a panel: a PromQL expression and its legend.
type query struct{ expr, legend string }

// panel is a time series panel of the dashboard.
type panel struct {
	title, description, unit string
	queries                  []query
	// stacked stacks the series (parts of a whole).
	stacked bool
}

// panels are the dashboard's panels, two to a row, in this order.
var panels = []panel{
	{
		title: "Ingest rate per replica",
		description: "Data points per second accepted by the OTLP receiver, and stored by agentprometheus: " +
			"what the exporter was handed minus what it dropped (points_dropped) or refused (series_refused).",
		unit: "short",
		queries: []query{
			{`sum by (instance) (rate(otelcol_receiver_accepted_metric_points{` + replicaSel + `}[$__rate_interval]))`, "accepted {{instance}}"},
			{`sum by (instance) (rate(otelcol_exporter_sent_metric_points{exporter="agentprometheus", ` + replicaSel + `}[$__rate_interval]))
- sum by (instance) (
    rate(otelcol_exporter_agentprometheus_points_dropped{` + replicaSel + `}[$__rate_interval])
  or
    rate(otelcol_exporter_agentprometheus_series_refused{` + replicaSel + `}[$__rate_interval])
  or
    0 * rate(otelcol_exporter_sent_metric_points{exporter="agentprometheus", ` + replicaSel + `}[$__rate_interval])
)`, "stored {{instance}}"},
		},
	},
	{
		title:       "Series held per replica",
		description: "Series each replica holds for scrapes (series_active); bounded by max_series.",
		unit:        "short",
		stacked:     true,
		queries: []query{
			{`sum by (instance) (otelcol_exporter_agentprometheus_series_active{` + replicaSel + `})`, "{{instance}}"},
		},
	},
	{
		title: "Top agents by series",
		description: "The 10 agents (job, instance: service.name, service.instance.id) with the most series in Prometheus, " +
			"counted there: the exporter's telemetry has no per-agent series (its /cardinality page has them). " +
			"Counts every series of the selected agent jobs: on a large Prometheus, narrow $agent_job.",
		unit: "short",
		queries: []query{
			{`topk(10, count by (job, instance) ({job=~"$agent_job"}))`, "{{job}} {{instance}}"},
		},
	},
	{
		title: "Refusals by reason",
		description: "Per second, over the selected replicas: data points of new series refused over a limit (max_series, " +
			"max_series_per_resource), points dropped (type_conflict, invalid_name, invalid, unsupported_temporality, out_of_order, label_clash), " +
			"points the receiver refused (memory_limiter: over the soft limit), and scrapes not served (scrape refused, timeout, too_slow, failed).",
		unit: "short",
		queries: []query{
			{`sum by (reason) (rate(otelcol_exporter_agentprometheus_series_refused{` + replicaSel + `}[$__rate_interval]))
or
sum by (reason) (rate(otelcol_exporter_agentprometheus_points_dropped{` + replicaSel + `}[$__rate_interval]))
or
label_replace(sum(rate(otelcol_receiver_refused_metric_points{` + replicaSel + `}[$__rate_interval])), "reason", "memory_limiter", "", "")
or
sum by (reason) (label_replace(rate(otelcol_exporter_agentprometheus_scrapes{outcome=~"refused|timeout|too_slow|failed", ` + replicaSel + `}[$__rate_interval]), "reason", "scrape $1", "outcome", "(.+)"))`, "{{reason}}"},
		},
	},
	{
		title:       "Scrape duration by format",
		description: "Time to serve one scrape of /metrics, by the exposition format it negotiated (the exporter's scrape_duration histogram), over the selected replicas.",
		unit:        "s",
		queries: []query{
			{`histogram_quantile(0.5, sum by (format, le) (rate(otelcol_exporter_agentprometheus_scrape_duration_bucket{` + replicaSel + `}[$__rate_interval])))`, "p50 {{format}}"},
			{`histogram_quantile(0.99, sum by (format, le) (rate(otelcol_exporter_agentprometheus_scrape_duration_bucket{` + replicaSel + `}[$__rate_interval])))`, "p99 {{format}}"},
		},
	},
	{
		title: "Memory vs limit",
		description: "Resident memory and Go heap of each replica, against the memory_limiter's limit_mib and GOMEMLIMIT " +
			"($limit_mib and $gomemlimit_mib: the collector does not export them; deploy/kubernetes/base sets 1434 and 1638 MiB).",
		unit: "bytes",
		queries: []query{
			{`max by (instance) (otelcol_process_memory_rss{` + replicaSel + `})`, "RSS {{instance}}"},
			{`max by (instance) (otelcol_process_runtime_heap_alloc_bytes{` + replicaSel + `})`, "heap {{instance}}"},
			{`vector($limit_mib * 1024 * 1024)`, "memory_limiter limit_mib"},
			{`vector($gomemlimit_mib * 1024 * 1024)`, "GOMEMLIMIT"},
		},
	},
	{
		title:       "Fleet members",
		description: "Live members of the fleet's cluster as each replica sees it, itself included (1 when alone).",
		unit:        "short",
		queries: []query{
			{`max by (instance) (otelcol_exporter_agentprometheus_fleet_members{` + replicaSel + `})`, "{{instance}}"},
		},
	},
	{
		title: "Departures per replica",
		description: "Series per second each replica removed because another replica claimed their agent (reason departed), " +
			"and the claims it sent: agents moving between replicas.",
		unit: "short",
		queries: []query{
			{`sum by (instance) (rate(otelcol_exporter_agentprometheus_series_removed{reason="departed", ` + replicaSel + `}[$__rate_interval]))`, "series departed {{instance}}"},
			{`sum by (instance) (rate(otelcol_exporter_agentprometheus_fleet_claims_sent{` + replicaSel + `}[$__rate_interval]))`, "claims sent {{instance}}"},
		},
	},
}

// datasource is the ${datasource} variable, the source of every query.
var datasource = common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}

func queryVariable(name, label, description, query string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Description(description).
		Datasource(datasource).
		Query(dashboard.StringOrMap{String: cog.ToPtr(query)}).
		Definition(query).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(true).
		IncludeAll(true)
}

func textVariable(name, label, description, value string) *dashboard.TextBoxVariableBuilder {
	return dashboard.NewTextBoxVariableBuilder(name).
		Label(label).
		Description(description).
		DefaultValue(dashboard.StringOrMap{String: cog.ToPtr(value)}).
		Current(dashboard.VariableOption{
			Text:  dashboard.StringOrArrayOfString{String: cog.ToPtr(value)},
			Value: dashboard.StringOrArrayOfString{String: cog.ToPtr(value)},
		})
}

func build() (dashboard.Dashboard, error) {
	b := dashboard.NewDashboardBuilder("statsgate fleet").
		Uid("statsgate-fleet").
		Description("Gateways of a statsgate fleet: ingest, series, refusals, scrapes, memory and the fleet's membership (deploy/dashboards/README.md).").
		Tags([]string{"statsgate", "opentelemetry", "prometheus"}).
		Refresh("30s").
		Time("now-1h", "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").
			Label("Data source").
			Type("prometheus")).
		WithVariable(queryVariable("job", "Telemetry job",
			"Prometheus job(s) scraping the replicas' own telemetry (the collector's :8888).",
			`label_values(otelcol_exporter_agentprometheus_series_active, job)`).AllValue(".+")).
		WithVariable(queryVariable("replica", "Replica",
			"Replicas (instance of their telemetry target).",
			`label_values(otelcol_exporter_agentprometheus_series_active{job=~"$job"}, instance)`).AllValue(".+")).
		WithVariable(queryVariable("agent_job", "Agent job",
			"Agents' jobs (service.name) for the top agents panel: the jobs of OTel resources (target_info) outside $job.",
			`label_values(target_info{job!~"$job"}, job)`)).
		WithVariable(textVariable("limit_mib", "memory_limiter limit_mib",
			"The memory_limiter's limit_mib (deploy/kubernetes/base: 1434, overlays/production: 2867).", "1434")).
		WithVariable(textVariable("gomemlimit_mib", "GOMEMLIMIT (MiB)",
			"The replicas' GOMEMLIMIT in MiB (deploy/kubernetes/base: 1638, overlays/production: 3277).", "1638"))

	for i, p := range panels {
		ts := timeseries.NewPanelBuilder().
			Id(uint32(i + 1)).
			Title(p.title).
			Description(p.description).
			Datasource(datasource).
			Unit(p.unit).
			Min(0).
			GridPos(dashboard.GridPos{X: uint32(i%2) * 12, Y: uint32(i/2) * 8, W: 12, H: 8}).
			Legend(common.NewVizLegendOptionsBuilder().
				DisplayMode(common.LegendDisplayModeList).
				Placement(common.LegendPlacementBottom).
				ShowLegend(true))
		if p.stacked {
			ts.FillOpacity(20).Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal))
		}
		for j, q := range p.queries {
			ts.WithTarget(prometheus.NewDataqueryBuilder().
				RefId(string(rune('A' + j))).
				Datasource(datasource).
				Expr(q.expr).
				LegendFormat(q.legend).
				Range())
		}
		b.WithPanel(ts)
	}
	return b.Build()
}

func main() {
	out := flag.String("o", "statsgate.json", "file the dashboard's JSON is written to")
	flag.Parse()
	d, err := build()
	if err == nil {
		var body []byte
		if body, err = json.MarshalIndent(d, "", "  "); err == nil {
			err = os.WriteFile(*out, append(body, '\n'), 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dashboards:", err)
		os.Exit(1)
	}
}
