package check

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Collector is the collector config a ConfigMap carries, with the container's
// environment to resolve its ${env:NAME} references.
type Collector struct {
	tree map[string]any
	env  map[string]string
}

// ParseCollector parses a collector config; env is the container's environment
// (names to values; a value from a Secret may be any placeholder).
func ParseCollector(config []byte, env map[string]string) (*Collector, error) {
	var tree map[string]any
	// Numbers as written (json.Number), not float64: 1500000 must not read as 1.5e+06.
	useNumber := func(d *json.Decoder) *json.Decoder { d.UseNumber(); return d }
	if err := yaml.Unmarshal(config, &tree, useNumber); err != nil {
		return nil, fmt.Errorf("collector config: %w", err)
	}
	return &Collector{tree: tree, env: env}, nil
}

// envRef is the collector's environment reference: ${env:NAME} or
// ${env:NAME:-default}.
var envRef = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}`)

// RequiredEnv lists the variables the config references without a default, in
// order of first use.
func RequiredEnv(config []byte) []string {
	var names []string
	seen := map[string]bool{}
	for _, m := range envRef.FindAllSubmatch(config, -1) {
		name := string(m[1])
		if len(m[2]) == 0 && !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	return names
}

// value returns the scalar at path, with its environment references resolved, and
// whether it is set.
func (c *Collector) value(path ...string) (string, bool, error) {
	var node any = c.tree
	for _, key := range path {
		m, ok := node.(map[string]any)
		if !ok {
			return "", false, nil
		}
		if node, ok = m[key]; !ok {
			return "", false, nil
		}
	}
	if node == nil {
		return "", false, nil
	}
	s, err := c.resolve(strings.Join(path, "::"), node)
	return s, true, err
}

// resolve returns the scalar node (the option where) with its environment
// references resolved.
func (c *Collector) resolve(where string, node any) (string, error) {
	switch node.(type) {
	case map[string]any, []any:
		return "", fmt.Errorf("%s: not a scalar", where)
	}
	var missing []string
	s := envRef.ReplaceAllStringFunc(fmt.Sprint(node), func(ref string) string {
		m := envRef.FindStringSubmatch(ref)
		if val, ok := c.env[m[1]]; ok {
			return val
		}
		if m[2] != "" {
			return strings.TrimPrefix(m[2], ":-")
		}
		missing = append(missing, m[1])
		return ""
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("%s: ${env:%s} is not set on the container", where, strings.Join(missing, "}, ${env:"))
	}
	return s, nil
}

func (c *Collector) int(path ...string) (int64, error) {
	s, ok, err := c.value(path...)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("%s: not set; the sizing needs it explicitly", strings.Join(path, "::"))
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not an integer", strings.Join(path, "::"), s)
	}
	return n, nil
}

func (c *Collector) has(path ...string) bool {
	node := any(c.tree)
	for _, key := range path {
		m, ok := node.(map[string]any)
		if !ok {
			return false
		}
		if node, ok = m[key]; !ok {
			return false
		}
	}
	return true
}

// Listener is an address the collector listens on, and the container port (by
// name) it must be declared as.
type Listener struct {
	PortName string
	Path     []string
}

// Listeners are the gateway's listen addresses that something outside the pod
// reaches: the kubelet (health), agents (OTLP), Prometheus (metrics).
var Listeners = []Listener{
	{"health", []string{"extensions", "health_check", "endpoint"}},
	{"otlp-grpc", []string{"receivers", "otlp", "protocols", "grpc", "endpoint"}},
	{"otlp-http", []string{"receivers", "otlp", "protocols", "http", "endpoint"}},
	{"metrics", []string{"exporters", "agentprometheus", "endpoint"}},
}

// ListenPort returns the port l listens on, failing when it listens on loopback
// only (nothing outside the pod could reach it).
func (c *Collector) ListenPort(l Listener) (int32, error) {
	where := strings.Join(l.Path, "::")
	addr, ok, err := c.value(l.Path...)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("%s: not set; its default listens on localhost only", where)
	}
	return reachablePort(where, addr, fmt.Sprintf("container port %q", l.PortName))
}

// reachablePort returns the port of the listen address addr (the option where),
// failing when it is on loopback only: what is reached on the pod's IP (what)
// would find nothing there.
func reachablePort(where, addr, what string) (int32, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", where, err)
	}
	switch host {
	case "", "0.0.0.0", "::":
	default:
		return 0, fmt.Errorf("%s: %q listens on %s only; the %s is reached on the pod's IP (use 0.0.0.0)", where, addr, host, what)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("%s: port %q: %w", where, port, err)
	}
	return int32(n), nil
}

// raw returns the scalar at path as written, references unresolved.
func (c *Collector) raw(path ...string) string {
	node := any(c.tree)
	for _, key := range path {
		m, ok := node.(map[string]any)
		if !ok {
			return ""
		}
		node = m[key]
	}
	if node == nil {
		return ""
	}
	return fmt.Sprint(node)
}

// ServesTLS tells whether the exporter's /metrics endpoint is configured with TLS,
// which decides the scheme Prometheus must use.
func (c *Collector) ServesTLS() bool { return c.has("exporters", "agentprometheus", "tls") }

// SendsTimestamps tells whether the exporter's samples carry their points'
// timestamps.
func (c *Collector) SendsTimestamps() (bool, error) {
	s, ok, err := c.value("exporters", "agentprometheus", "send_timestamps")
	if err != nil || !ok {
		return err == nil, err // on by default
	}
	return strconv.ParseBool(s)
}

// defaultDrainTimeout is the exporter's scrape::drain_timeout when unset.
const defaultDrainTimeout = 30 * time.Second

// DrainTimeout is how long the exporter's shutdown may wait for scrapers to
// take the last deltas (scrape::drain_timeout).
func (c *Collector) DrainTimeout() (time.Duration, error) {
	s, ok, err := c.value("exporters", "agentprometheus", "scrape", "drain_timeout")
	if err != nil || !ok {
		return defaultDrainTimeout, err
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("exporters::agentprometheus::scrape::drain_timeout: %w", err)
	}
	return d, nil
}

// Fleet is the exporter's fleet block (exporters::agentprometheus::fleet).
type Fleet struct {
	Enabled bool
	// Bind is the gossip listen address, the exporter's default when unset.
	Bind string
	// Advertise is as written: ${env:NAME} references unresolved, since which
	// variable it reads matters, not the placeholder it resolves to here.
	Advertise string
	// Join lists the peers, resolved.
	Join []string
	// SecretKeyFile is the path of the key file, resolved; empty when unset.
	SecretKeyFile string
}

// defaultFleetBind is the exporter's fleet::bind when unset.
const defaultFleetBind = "0.0.0.0:7946"

// fleetPath is where the fleet block is in the collector config.
var fleetPath = []string{"exporters", "agentprometheus", "fleet"}

func fleetKey(key string) []string { return append(append([]string{}, fleetPath...), key) }

// Fleet reads the exporter's fleet block.
func (c *Collector) Fleet() (Fleet, error) {
	f := Fleet{Bind: defaultFleetBind, Advertise: c.raw(fleetKey("advertise")...)}
	var errs []error
	if s, ok, err := c.value(fleetKey("enabled")...); err != nil {
		errs = append(errs, err)
	} else if ok {
		if f.Enabled, err = strconv.ParseBool(s); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", strings.Join(fleetKey("enabled"), "::"), err))
		}
	}
	if s, ok, err := c.value(fleetKey("bind")...); err != nil {
		errs = append(errs, err)
	} else if ok {
		f.Bind = s
	}
	join, err := c.list(fleetKey("join")...)
	errs = append(errs, err)
	f.Join = join
	key, _, err := c.value(fleetKey("secret_key_file")...)
	errs = append(errs, err)
	f.SecretKeyFile = key
	return f, errors.Join(errs...)
}

// list returns the list at path with each entry's environment references
// resolved; a scalar there is a list of one.
func (c *Collector) list(path ...string) ([]string, error) {
	node := any(c.tree)
	for _, key := range path {
		m, ok := node.(map[string]any)
		if !ok {
			return nil, nil
		}
		node = m[key]
	}
	where := strings.Join(path, "::")
	switch v := node.(type) {
	case nil:
		return nil, nil
	case []any:
		out := make([]string, 0, len(v))
		for i, item := range v {
			s, err := c.resolve(fmt.Sprintf("%s[%d]", where, i), item)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	default:
		s, err := c.resolve(where, v)
		return []string{s}, err
	}
}

// scheme is the scheme Prometheus must scrape the exporter with.
func scheme(c *Collector) string {
	if c.ServesTLS() {
		return "https"
	}
	return "http"
}

// ScrapeToken returns the Secret key that holds the token Prometheus must present,
// or nil when /metrics takes no bearer token.
func (g *Gateway) ScrapeToken() (*corev1.SecretKeySelector, error) {
	auth := g.Collector.raw("exporters", "agentprometheus", "auth", "authenticator")
	if auth == "" || !strings.HasPrefix(auth, "bearertokenauth") {
		return nil, nil
	}
	token := g.Collector.raw("extensions", auth, "token")
	m := envRef.FindStringSubmatch(token)
	if m == nil || m[0] != token {
		return nil, fmt.Errorf("extensions::%s::token must be ${env:NAME} with NAME from a Secret, never a value in the config", auth)
	}
	sel, ok := g.SecretEnv[m[1]]
	if !ok {
		return nil, fmt.Errorf("extensions::%s::token: ${env:%s} must come from a Secret (valueFrom.secretKeyRef)", auth, m[1])
	}
	return &sel, nil
}

// Sizing holds the memory numbers that must agree: the container's limit, Go's
// soft limit, memory_limiter's limits and the exporter's series bounds.
type Sizing struct {
	ContainerLimit       int64 // bytes (resources.limits.memory)
	GoMemLimit           int64 // bytes (GOMEMLIMIT)
	LimitMiB             int64 // memory_limiter limit_mib
	SpikeLimitMiB        int64 // memory_limiter spike_limit_mib
	MaxSeries            int64 // agentprometheus max_series
	MaxSeriesPerResource int64 // agentprometheus max_series_per_resource
}

const (
	mib = 1 << 20
	// BytesPerSeries bounds what the exporter holds per series: about 240 B
	// measured with the bench workload (BENCHMARKS.md "Retained memory"), more
	// for longer label sets; ~400 B in the README's sizing rule.
	BytesPerSeries = 400
	// SeriesShareOfSoftLimit: a full series store may take at most this share of
	// memory_limiter's soft limit; the rest is for OTLP requests in flight, grpcstats'
	// state, descriptors and scrape buffers. Above it, a full store would keep the
	// limiter refusing data.
	SeriesShareOfSoftLimit = 0.6
	// PerResourceFactor: max_series_per_resource must be at most max_series / this,
	// so that a few flooding agents cannot fill the store.
	PerResourceFactor = 10
)

// Sizing reads the memory_limiter and exporter numbers from the config; the
// container's numbers are filled in by the caller.
func (c *Collector) Sizing() (Sizing, error) {
	var s Sizing
	var errs []error
	for _, f := range []struct {
		dst  *int64
		path []string
	}{
		{&s.LimitMiB, []string{"processors", "memory_limiter", "limit_mib"}},
		{&s.SpikeLimitMiB, []string{"processors", "memory_limiter", "spike_limit_mib"}},
		{&s.MaxSeries, []string{"exporters", "agentprometheus", "max_series"}},
		{&s.MaxSeriesPerResource, []string{"exporters", "agentprometheus", "max_series_per_resource"}},
	} {
		n, err := c.int(f.path...)
		errs = append(errs, err)
		*f.dst = n
	}
	return s, errors.Join(errs...)
}

// Check returns every way the numbers disagree.
func (s Sizing) Check() error {
	var errs []error
	if s.GoMemLimit >= s.ContainerLimit {
		errs = append(errs, fmt.Errorf("GOMEMLIMIT (%d MiB) must be below the container's memory limit (%d MiB)", s.GoMemLimit/mib, s.ContainerLimit/mib))
	}
	if s.LimitMiB*mib >= s.GoMemLimit {
		errs = append(errs, fmt.Errorf("memory_limiter limit_mib (%d) must be below GOMEMLIMIT (%d MiB)", s.LimitMiB, s.GoMemLimit/mib))
	}
	if s.SpikeLimitMiB <= 0 || s.SpikeLimitMiB >= s.LimitMiB {
		errs = append(errs, fmt.Errorf("memory_limiter spike_limit_mib (%d) must be positive and below limit_mib (%d)", s.SpikeLimitMiB, s.LimitMiB))
	}
	soft := float64((s.LimitMiB - s.SpikeLimitMiB) * mib)
	if series := float64(s.MaxSeries * BytesPerSeries); series > SeriesShareOfSoftLimit*soft {
		errs = append(errs, fmt.Errorf("max_series (%d) x %d B = %.0f MiB is more than %.0f%% of memory_limiter's soft limit (limit_mib - spike_limit_mib = %.0f MiB): a full series store would leave too little for OTLP in flight",
			s.MaxSeries, BytesPerSeries, series/mib, 100*SeriesShareOfSoftLimit, soft/mib))
	}
	if s.MaxSeriesPerResource <= 0 || s.MaxSeriesPerResource*PerResourceFactor > s.MaxSeries {
		errs = append(errs, fmt.Errorf("max_series_per_resource (%d) must be positive and at most max_series / %d (%d)", s.MaxSeriesPerResource, PerResourceFactor, s.MaxSeries/PerResourceFactor))
	}
	return errors.Join(errs...)
}

// goMemLimitSyntax is GOMEMLIMIT's: a number of bytes with an optional unit.
var goMemLimitSyntax = regexp.MustCompile(`^([0-9]+)(B|KiB|MiB|GiB|TiB)?$`)

// ParseGoMemLimit parses a GOMEMLIMIT value as the Go runtime does (integers only).
func ParseGoMemLimit(s string) (int64, error) {
	m := goMemLimitSyntax.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("GOMEMLIMIT %q: want bytes with an optional B, KiB, MiB, GiB or TiB suffix", s)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("GOMEMLIMIT %q: %w", s, err)
	}
	shift := map[string]uint{"": 0, "B": 0, "KiB": 10, "MiB": 20, "GiB": 30, "TiB": 40}[m[2]]
	return n << shift, nil
}

// TelemetryPortName is the container port the collector's own metrics are
// declared as, and scraped on (the job and PodMonitor statsgate-telemetry).
const TelemetryPortName = "telemetry"

// TelemetryPort returns the port the collector serves its own metrics on
// (service::telemetry::metrics::readers[*]::pull::exporter::prometheus), failing
// when there is no such reader or it listens on loopback only: Prometheus reaches
// it on the pod's IP.
func (c *Collector) TelemetryPort() (int32, error) {
	const where = "service::telemetry::metrics::readers"
	node := any(c.tree)
	for _, key := range []string{"service", "telemetry", "metrics", "readers"} {
		m, ok := node.(map[string]any)
		if !ok {
			node = nil
			break
		}
		node = m[key]
	}
	readers, _ := node.([]any)
	for i, r := range readers {
		at := fmt.Sprintf("%s[%d]::pull::exporter::prometheus", where, i)
		prom, ok := dig(r, "pull", "exporter", "prometheus").(map[string]any)
		if !ok {
			continue
		}
		host := "localhost" // the collector's default
		if prom["host"] != nil {
			var err error
			if host, err = c.resolve(at+"::host", prom["host"]); err != nil {
				return 0, err
			}
		}
		port, err := c.resolve(at+"::port", prom["port"])
		if err != nil {
			return 0, err
		}
		return reachablePort(at, net.JoinHostPort(host, port), fmt.Sprintf("container port %q", TelemetryPortName))
	}
	return 0, fmt.Errorf("%s: no pull reader with a prometheus exporter; the collector's own metrics are not served", where)
}

// dig follows keys through nested maps; nil when one is missing.
func dig(node any, keys ...string) any {
	for _, key := range keys {
		m, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		node = m[key]
	}
	return node
}
