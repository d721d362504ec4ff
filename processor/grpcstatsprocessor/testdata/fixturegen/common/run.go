package common

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
)

// Variant describes one fixture: which stats handlers are registered and
// how their data reaches the capture.
type Variant struct {
	// Name is the fixture file name without extension.
	Name string
	// Description is copied into the manifest.
	Description string
	// Libraries lists the module paths of the captured libraries; their
	// versions are read from the build info into the manifest.
	Libraries []string
	// Env is set with os.Setenv before Setup runs and recorded in the
	// manifest.
	Env map[string]string
	// SupportLibraries, when set, replaces the default list of modules
	// recorded as support_libraries in the manifest.
	SupportLibraries []string
	// ExpectMetrics are metric names the fixture must contain.
	ExpectMetrics []string
	// Setup registers the variant's handlers. endpoint is the loopback
	// address of the OTLP capture server.
	Setup func(ctx context.Context, endpoint string) (*Instrumentation, error)
}

// Instrumentation is what a variant's Setup returns.
type Instrumentation struct {
	ServerOptions []grpc.ServerOption
	DialOptions   []grpc.DialOption
	// Registered, when set, is called after the test service is registered
	// and before the server serves.
	Registered func(*grpc.Server)
	// Serve, when set, replaces the grpc-go server and client: it serves
	// and calls the test service its own way (e.g. with connect-go), stops
	// its server and client, and returns the calls made. ServerOptions,
	// DialOptions and Registered are then unused.
	Serve func(ctx context.Context) ([]Call, error)
	// Flush runs once all calls are done and the test server and client are
	// stopped. It must export exactly once to the capture server, or return
	// the captured metrics itself (for data that does not come through OTLP).
	Flush func(ctx context.Context) (*pmetric.Metrics, error)
}

// ModuleVersion returns the version of a module linked into the binary.
func ModuleVersion(path string) (string, error) {
	libs, err := moduleVersions([]string{path})
	if err != nil {
		return "", err
	}
	return libs[0].Version, nil
}

// Library is a module path and the version linked into the generator.
type Library struct {
	Path    string `json:"path"`
	Version string `json:"version"`
}

// Manifest records how a fixture was produced.
type Manifest struct {
	Variant     string            `json:"variant"`
	Description string            `json:"description"`
	Libraries   []Library         `json:"libraries"`
	Support     []Library         `json:"support_libraries"`
	GoVersion   string            `json:"go_version"`
	Env         map[string]string `json:"env"`
	Calls       []Call            `json:"calls"`
	TotalCalls  int               `json:"total_calls"`
	Exports     int               `json:"exports"`
}

// supportModules are always recorded: they carry the data but are not the
// subject of the fixture.
var supportModules = []string{
	"google.golang.org/grpc",
	"go.opentelemetry.io/otel",
	"go.opentelemetry.io/otel/sdk/metric",
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc",
	"go.opentelemetry.io/collector/pdata",
}

// Main runs the variant and writes its fixture files; it exits the process
// with status 1 on failure.
func Main(v Variant) {
	out := flag.String("out", filepath.Join("..", "..", "fixtures"), "directory the fixture files are written to")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := Run(ctx, v, *out); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", v.Name, err)
		os.Exit(1)
	}
}

// Run sets the variant up, makes the call mix, collects the metrics and
// writes <out>/<name>.json and <out>/<name>.manifest.json.
func Run(ctx context.Context, v Variant, out string) error {
	libs, err := moduleVersions(v.Libraries)
	if err != nil {
		return err
	}
	supportPaths := supportModules
	if v.SupportLibraries != nil {
		supportPaths = v.SupportLibraries
	}
	support, err := moduleVersions(supportPaths)
	if err != nil {
		return err
	}
	env := map[string]string{}
	for k, val := range v.Env {
		if err := os.Setenv(k, val); err != nil {
			return err
		}
		env[k] = val
	}

	capture, err := StartCaptureServer()
	if err != nil {
		return err
	}
	defer capture.Stop()

	inst, err := v.Setup(ctx, capture.Endpoint())
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}

	var calls []Call
	if inst.Serve != nil {
		calls, err = inst.Serve(ctx)
	} else {
		calls, err = serveAndCall(ctx, inst)
	}
	if err != nil {
		return err
	}

	direct, err := inst.Flush(ctx)
	if err != nil {
		return fmt.Errorf("flush: %w", err)
	}
	md, exports := capture.Received()
	if direct != nil {
		if exports != 0 {
			return fmt.Errorf("flush returned metrics but %d OTLP exports were received too", exports)
		}
		md = *direct
	} else if exports != 1 {
		return fmt.Errorf("want exactly 1 OTLP export, received %d", exports)
	}
	if md.MetricCount() == 0 {
		return errors.New("no metrics captured")
	}
	Normalize(md)

	if missing := missingMetrics(md, v.ExpectMetrics); len(missing) > 0 {
		PrintSummary(os.Stdout, v.Name, md)
		return fmt.Errorf("expected metrics missing: %v", missing)
	}

	total := 0
	for _, c := range calls {
		total += c.Count
	}
	m := Manifest{
		Variant:     v.Name,
		Description: v.Description,
		Libraries:   libs,
		Support:     support,
		GoVersion:   runtime.Version(),
		Env:         env,
		Calls:       calls,
		TotalCalls:  total,
		Exports:     exports,
	}
	if err := WriteFixture(out, v.Name, md, m); err != nil {
		return err
	}
	PrintSummary(os.Stdout, v.Name, md)
	return nil
}

// serveAndCall starts the test server, makes the call mix through a client
// and stops both before returning.
func serveAndCall(ctx context.Context, inst *Instrumentation) ([]Call, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("test server listen: %w", err)
	}
	srv := grpc.NewServer(inst.ServerOptions...)
	testpb.RegisterTestServiceServer(srv, testService{})
	if inst.Registered != nil {
		inst.Registered(srv)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()

	dialOpts := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, inst.DialOptions...)
	conn, err := grpc.NewClient("passthrough:///"+lis.Addr().String(), dialOpts...)
	if err != nil {
		srv.Stop()
		return nil, fmt.Errorf("dial: %w", err)
	}
	calls, callErr := runCallMix(ctx, conn)
	closeErr := conn.Close()
	srv.GracefulStop()
	if err := <-served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return nil, fmt.Errorf("serve: %w", err)
	}
	if callErr != nil {
		return nil, callErr
	}
	if closeErr != nil {
		return nil, fmt.Errorf("close client: %w", closeErr)
	}
	return calls, nil
}

func moduleVersions(paths []string) ([]Library, error) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil, errors.New("no build info")
	}
	byPath := map[string]string{}
	for _, d := range bi.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		byPath[d.Path] = m.Version
	}
	var out []Library
	for _, p := range paths {
		ver, ok := byPath[p]
		if !ok {
			return nil, fmt.Errorf("module %s is not linked into this binary", p)
		}
		out = append(out, Library{Path: p, Version: ver})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

func missingMetrics(md pmetric.Metrics, want []string) []string {
	have := map[string]bool{}
	forEachMetric(md, func(_ pmetric.ScopeMetrics, m pmetric.Metric) { have[m.Name()] = true })
	var missing []string
	for _, w := range want {
		if !have[w] {
			missing = append(missing, w)
		}
	}
	return missing
}

func forEachMetric(md pmetric.Metrics, f func(pmetric.ScopeMetrics, pmetric.Metric)) {
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				f(sms.At(j), ms.At(k))
			}
		}
	}
}
