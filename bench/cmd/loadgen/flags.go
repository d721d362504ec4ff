package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/statsgate/statsgate/bench/internal/promscrape"
)

// options are the flags of a run.
type options struct {
	name          string
	agents        int
	families      int
	series        int
	otlpEndpoint  string
	metricsURL    string
	scrapes       int                  // per profile
	profiles      []promscrape.Profile // how to ask for the scrapes
	concurrency   int
	timeout       time.Duration
	scrapeTimeout time.Duration
	pid           int
}

// command is what loadgen is asked to do: run the load (the default), or
// one of the helpers for bench/e2e.sh.
type command struct {
	run       options
	freePorts int    // print this many free ports
	table     string // print this file of summaries as a table
	base      string // the run the table's ratios divide by
	describe  bool   // print what the load is
}

// parseFlags reads the command line; usage and errors go to stderr.
func parseFlags(args []string, stderr io.Writer) (command, error) {
	var c command
	o := &c.run
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.name, "name", "", "label of this run in the output (e.g. the exporter's name)")
	fs.IntVar(&o.agents, "agents", 10, "number of agents (A): one resource and one OTLP request each")
	fs.IntVar(&o.families, "families", 10, "metric families per agent (F): 40% gauges, 30% counters, 30% histograms (workload.Mix)")
	fs.IntVar(&o.series, "series", 100, "series per family per agent (S)")
	fs.StringVar(&o.otlpEndpoint, "otlp", "127.0.0.1:4317", "OTLP/gRPC endpoint of the collector (host:port)")
	fs.StringVar(&o.metricsURL, "metrics-url", "http://127.0.0.1:9464/metrics", "Prometheus endpoint of the collector")
	fs.IntVar(&o.scrapes, "scrapes", 3, "scrapes per profile (the median is reported)")
	profiles := fs.String("profiles", profileNames(promscrape.Profiles), "comma-separated profiles, the ways of asking for a scrape: "+profileNames(promscrape.Profiles))
	fs.IntVar(&o.concurrency, "concurrency", 8, "OTLP requests in flight at most")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "bound on the whole run (send and scrapes)")
	fs.DurationVar(&o.scrapeTimeout, "scrape-timeout", 2*time.Minute, "bound on one scrape")
	fs.IntVar(&o.pid, "pid", 0, "pid of the collector, for VmRSS/VmHWM from /proc/<pid>/status (0: not reported)")
	fs.IntVar(&c.freePorts, "free-ports", 0, "print this many free loopback TCP ports and exit (helper for scripts)")
	fs.StringVar(&c.table, "table", "", "print the JSON summaries in this file (one per line) as a markdown table and exit")
	fs.StringVar(&c.base, "base", "agentprometheus", "with -table: the -name of the runs each ratio divides by (same size and profile)")
	fs.BoolVar(&c.describe, "describe", false, "print what the load of -families, -series and -concurrency is, in one line of markdown, and exit")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	var err error
	if o.profiles, err = parseProfiles(*profiles); err != nil {
		fmt.Fprintln(stderr, "loadgen:", err)
		return c, err
	}
	if c.table == "" && c.freePorts == 0 {
		if err := o.validate(); err != nil {
			fmt.Fprintln(stderr, "loadgen:", err)
			fs.Usage()
			return c, err
		}
	}
	return c, nil
}

func (o options) validate() error {
	var errs []error
	if o.agents <= 0 || o.families <= 0 || o.series <= 0 {
		errs = append(errs, errors.New("-agents, -families and -series must be positive"))
	}
	if o.scrapes < 0 || o.scrapes > 1000 {
		errs = append(errs, errors.New("-scrapes must be within [0, 1000]"))
	}
	if o.scrapes > 0 && len(o.profiles) == 0 {
		errs = append(errs, errors.New("-profiles names none"))
	}
	if o.concurrency <= 0 || o.concurrency > 256 {
		errs = append(errs, errors.New("-concurrency must be within [1, 256]"))
	}
	if o.timeout <= 0 || o.scrapeTimeout <= 0 {
		errs = append(errs, errors.New("-timeout and -scrape-timeout must be positive"))
	}
	if !strings.HasPrefix(o.metricsURL, "http://") && !strings.HasPrefix(o.metricsURL, "https://") {
		errs = append(errs, fmt.Errorf("-metrics-url %q is not an http(s) URL", o.metricsURL))
	}
	return errors.Join(errs...)
}

// parseProfiles reads -profiles: names of promscrape.Profiles, in the order
// given.
func parseProfiles(list string) ([]promscrape.Profile, error) {
	var out []promscrape.Profile
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		p, ok := promscrape.ProfileNamed(name)
		if !ok {
			return nil, fmt.Errorf("-profiles: unknown profile %q (known: %s)", name, profileNames(promscrape.Profiles))
		}
		out = append(out, p)
	}
	return out, nil
}

func profileNames(ps []promscrape.Profile) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name
	}
	return strings.Join(names, ",")
}
