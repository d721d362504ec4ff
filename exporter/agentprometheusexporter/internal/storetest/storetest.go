// Package storetest fills a store as the exporter does, OTLP through the
// converter, so that the packages that read a store (exposition, scrape)
// test and benchmark themselves beside their code.
package storetest // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"

import (
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/resourcetotelemetry"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/aggregate"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/convert"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/descriptors"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/prommodel"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
)

// Naming is what a translation_strategy asks of names.
type Naming struct {
	Strategy     string // its translation_strategy value
	WithSuffixes bool
	UTF8Allowed  bool
}

// The four translation strategies, as the exporter's configuration maps them.
var (
	UnderscoreEscapingWithSuffixes    = namingOf("UnderscoreEscapingWithSuffixes")
	UnderscoreEscapingWithoutSuffixes = namingOf("UnderscoreEscapingWithoutSuffixes")
	NoUTF8EscapingWithSuffixes        = namingOf("NoUTF8EscapingWithSuffixes")
	NoTranslation                     = namingOf("NoTranslation")

	AllNamings = []Naming{UnderscoreEscapingWithSuffixes, UnderscoreEscapingWithoutSuffixes, NoUTF8EscapingWithSuffixes, NoTranslation}
)

func (n Naming) String() string { return n.Strategy }

// namingOf is the Naming of a translation_strategy, as the exporter maps it.
func namingOf(strategy string) Naming {
	withSuffixes, utf8Allowed, ok := convert.StrategyNaming(strategy)
	if !ok {
		panic("storetest: unknown translation strategy " + strategy)
	}
	return Naming{strategy, withSuffixes, utf8Allowed}
}

// Options are the settings of a Store beyond its naming; the zero value is
// the exporter's defaults.
type Options struct {
	Naming Naming
	// ResourceLabels are resource attributes made labels by name.
	ResourceLabels []string
	// WithoutScopeInfo leaves the otel_scope_* labels out.
	WithoutScopeInfo bool
	MaxSeries        int // 1,000,000 when 0
	Claims           prommodel.Claims
	// Aggregate are the aggregate rules; Aggregation the aggregator's
	// settings besides them (its rules and limits come from here when
	// unset: 1,000,000 sources, 50,000 per agent, a 5-minute expiration).
	Aggregate   []aggregate.RuleConfig
	Aggregation aggregate.Config
}

// Store is a store, its converter and the scrape options the exporter
// would derive from them, on a clock of its own that starts at 2023-11-14.
type Store struct {
	*store.Store
	Conv *convert.Converter
	Expo exposition.Options
	// Agg is the aggregator, nil without rules.
	Agg *aggregate.Aggregator
	now int64
}

// New is an empty Store.
func New(tb testing.TB, o Options) *Store {
	tb.Helper()
	if o.Naming == (Naming{}) {
		o.Naming = UnderscoreEscapingWithSuffixes
	}
	if o.MaxSeries == 0 {
		o.MaxSeries = 1_000_000
	}
	descs, err := descriptors.NewCache(10_000)
	if err != nil {
		tb.Fatal(err)
	}
	s := &Store{Store: store.New(o.MaxSeries, 50_000, o.Claims), now: time.Unix(1_700_000_000, 0).UnixNano()}
	var resourceLabels *convert.ResourceLabels
	if len(o.ResourceLabels) > 0 {
		resourceLabels = convert.NewResourceLabels(resourcetotelemetry.Settings{Included: o.ResourceLabels})
	}
	if len(o.Aggregate) > 0 {
		rules, err := aggregate.Compile(o.Aggregate, convert.Glob)
		if err != nil {
			tb.Fatal(err)
		}
		cfg := o.Aggregation
		cfg.Rules = rules
		if cfg.MaxSources == 0 {
			cfg.MaxSources = 1_000_000
		}
		if cfg.MaxSourcesPerTable == 0 {
			cfg.MaxSourcesPerTable = 50_000
		}
		if cfg.Expiration == 0 {
			cfg.Expiration = 5 * time.Minute
		}
		s.Agg = aggregate.New(cfg, s.Store)
	}
	s.Conv = convert.New(convert.Options{
		ConstLabels:      map[string]string{},
		ResourceLabels:   resourceLabels,
		WithoutScopeInfo: o.WithoutScopeInfo,
		WithSuffixes:     o.Naming.WithSuffixes,
		UTF8Allowed:      o.Naming.UTF8Allowed,
		Aggregator:       s.Agg,
	}, s.Store, descs, s.Now)
	s.Expo = exposition.Options{SendTimestamps: true, TargetInfoName: s.Conv.TargetInfoName}
	return s
}

// Of is a Store of naming that has consumed batches a minute apart.
func Of(tb testing.TB, naming Naming, batches ...pmetric.Metrics) *Store {
	tb.Helper()
	s := New(tb, Options{Naming: naming})
	for _, md := range batches {
		s.Consume(md)
		s.Advance(time.Minute)
	}
	return s
}

// Consume converts md into the store.
func (s *Store) Consume(md pmetric.Metrics) convert.Stats { return s.Conv.ConsumeMetrics(md) }

// Now is the Store's clock.
func (s *Store) Now() int64 { return s.now }

// Advance moves the Store's clock on. Not safe for use concurrent with
// Consume.
func (s *Store) Advance(d time.Duration) { s.now += int64(d) }
