// Command loadgen is the load generator of the end-to-end benchmark
// (bench/e2e.sh). It plays A agents × F metric families × S series per family
// (bench/internal/workload, the load bench/exporterbench feeds in process)
// into a collector over OTLP/gRPC, one request per agent, then scrapes the
// collector's Prometheus endpoint over HTTP as each Prometheus release asks
// for it (bench/internal/promscrape: Accept and Accept-Encoding headers) and
// reports, per way of asking, the scrape time, the format served, the bytes
// on the wire and decompressed, whether the body parses with Prometheus'
// own parser and holds every expected sample, and the collector's memory.
//
//	loadgen -agents 10 -families 10 -series 100 \
//	    -otlp 127.0.0.1:4317 -metrics-url http://127.0.0.1:9464/metrics \
//	    -scrapes 3 -profiles prom3,prom3-nh -pid 12345 -name agentprometheus
//
// It prints one JSON line on stdout (the machine-readable summary) and one
// human-readable line on stderr. Every loop is bounded by a count and by the
// -timeout deadline; only the given endpoints are contacted.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
)

func main() {
	c, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		os.Exit(2)
	}
	switch {
	case c.table != "":
		exitOn(writeTable(os.Stdout, c.table, c.base))
	case c.freePorts > 0:
		exitOn(printFreePorts(c.freePorts))
	case c.describe:
		fmt.Println(describe(c.run))
	default:
		sum, err := run(c.run)
		if sum != nil {
			line, jerr := json.Marshal(sum)
			exitOn(jerr)
			fmt.Println(string(line))
			fmt.Fprintln(os.Stderr, sum.human())
		}
		exitOn(err)
	}
}

func exitOn(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// run sends the load, then scrapes, and reads the collector's memory after each.
func run(o options) (*summary, error) {
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()

	s := &summary{
		Name:            o.name,
		Agents:          o.agents,
		Families:        o.families,
		SeriesPerFamily: o.series,
		OTLPSeries:      o.agents * o.families * o.series,
		ExpectedSamples: expectedSamples(o),
	}

	if err := send(ctx, o, s); err != nil {
		s.TimedOut = ctx.Err() != nil
		return s, err
	}
	if o.pid > 0 {
		if rss, _, err := procMemory(o.pid); err == nil {
			s.RSSMiBAfterSend = rss
		}
	}
	scrapeAll(ctx, o, s)
	if ctx.Err() != nil {
		s.TimedOut = true
	}
	if o.pid > 0 {
		rss, hwm, err := procMemory(o.pid)
		if err != nil {
			return s, err
		}
		s.RSSMiB, s.HWMMiB = rss, hwm
	}
	if s.Scrapes == 0 && o.scrapes > 0 && len(o.profiles) > 0 {
		return s, errors.New("no scrape was made before the deadline")
	}
	return s, nil
}
