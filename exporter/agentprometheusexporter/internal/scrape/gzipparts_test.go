package scrape

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/klauspost/compress/flate"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/store"
	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
	"github.com/statsgate/statsgate/internal/otlprand"
)

// compareParts checks that a scrape by parts, text, OpenMetrics and
// protobuf, writes what the sequential writers write, split every
// storetest.PartSplits way, and that the gzip parts, at each format's
// level, decompress to it.
func compareParts(st *store.Store, opts exposition.Options, scheme model.EscapingScheme) error {
	if err := storetest.CompareParts(st, opts, scheme, storetest.Plain, storetest.Undecoded); err != nil {
		return err
	}
	gzipOf := func(format string) exposition.Codec {
		if format == "protobuf" {
			return &gzipParts{level: DefaultGzipLevel}
		}
		return &gzipParts{level: DefaultGzipLevel}
	}
	return storetest.CompareParts(st, opts, scheme, gzipOf, func(body []byte) ([]byte, error) {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(zr) // checks the trailer: CRC-32 and length
	})
}

func TestScrapeByPartsWritesTheSequentialScrape(t *testing.T) {
	seeds := uint64(10)
	if testing.Short() || storetest.RaceEnabled {
		seeds = 3
	}
	for seed := range seeds {
		g := otlprand.New(seed)
		batches := []pmetric.Metrics{g.Batch(0), g.Batch(1), g.Batch(3)}
		for _, strategy := range []storetest.Naming{storetest.UnderscoreEscapingWithSuffixes, storetest.NoUTF8EscapingWithSuffixes} {
			e := storetest.Of(t, strategy, batches...)
			for _, r := range storetest.Releases {
				for _, scheme := range storetest.AllSchemes {
					opts := e.Expo
					opts.Release, opts.SendTimestamps, opts.CreatedSamples = r.Release, seed%2 == 0, seed%3 == 0
					if err := compareParts(e.Store, opts, scheme); err != nil {
						t.Fatalf("seed %d, %s, %s, escaping=%s: %v", seed, strategy, r.Name, scheme, err)
					}
				}
			}
		}
	}
}

// An empty store still gives a whole gzip stream (and OpenMetrics its EOF).
func TestScrapeByPartsOfAnEmptyStore(t *testing.T) {
	e := storetest.Of(t, storetest.UnderscoreEscapingWithSuffixes)
	require.NoError(t, compareParts(e.Store, e.Expo, model.UnderscoreEscaping))
}

// Every level makes one gzip stream of the scrape, its header marking the
// fastest and the slowest as Go's gzip writers do.
func TestGzipPartsAtEveryLevel(t *testing.T) {
	e := storetest.Of(t, storetest.UnderscoreEscapingWithSuffixes, storetest.AgentBatch(0, 20), storetest.AgentBatch(1, 20))
	var want bytes.Buffer
	require.NoError(t, exposition.Write(&want, e.Store, exposition.Request{Format: exposition.Protobuf, Options: e.Expo, Escaping: model.UnderscoreEscaping}))
	for level := flate.BestSpeed; level <= flate.BestCompression; level++ {
		var zipped bytes.Buffer
		require.NoError(t, exposition.Write(&zipped, e.Store, exposition.Request{Format: exposition.Protobuf, Options: e.Expo, Escaping: model.UnderscoreEscaping, Parts: exposition.Parts{Codec: &gzipParts{level: level}, Workers: 2, PartLines: 50}}))
		xfl := map[int]byte{flate.BestSpeed: 4, flate.BestCompression: 2}[level]
		assert.Equal(t, xfl, zipped.Bytes()[8], "XFL at level %d", level)
		zr, err := gzip.NewReader(&zipped)
		require.NoError(t, err)
		got, err := io.ReadAll(zr)
		require.NoError(t, err, "level %d", level)
		require.True(t, bytes.Equal(want.Bytes(), got), "level %d: bytes differ", level)
	}
}

// failingWriter fails every write after the first n bytes.
type failingWriter struct{ n int }

var errScraperGone = errors.New("scraper gone")

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		n := w.n
		w.n = 0
		return n, errScraperGone
	}
	w.n -= len(p)
	return len(p), nil
}

// A scrape whose writer fails returns the failure, wherever it happens,
// and its workers end (goleak checks the package for leaked goroutines).
func TestScrapeByPartsStopsOnAWriteError(t *testing.T) {
	e := storetest.Of(t, storetest.UnderscoreEscapingWithSuffixes, storetest.AgentBatch(0, 200), storetest.AgentBatch(1, 200))
	var whole bytes.Buffer
	require.NoError(t, exposition.Write(&whole, e.Store, exposition.Request{Format: exposition.Text, Options: e.Expo, Escaping: model.UnderscoreEscaping}))
	for _, at := range []int{0, 1, 100, whole.Len() / 2, whole.Len() - 1} {
		for _, split := range storetest.PartSplits {
			w := &failingWriter{n: at}
			err := exposition.Write(w, e.Store, exposition.Request{Format: exposition.Text, Options: e.Expo, Escaping: model.UnderscoreEscaping, Parts: exposition.Parts{Codec: storetest.PlainParts{}, Workers: split.Workers, PartLines: split.Lines}})
			assert.ErrorIs(t, err, errScraperGone, "failing after %d bytes, parts %+v", at, split)
		}
	}
}

// Parts are taken from the store as a sequential scrape takes series:
// forward, one after the other. A series that a sweep moves from the end of
// its family to an earlier place can then be missed, never written twice,
// however many workers format the parts. (A series swept and sent again
// during one scrape is a new series at the end of its family, and can be
// written twice by any scrape; expiry makes that rare, and the churn here
// sends new agents instead.)
func TestScrapeByPartsDuringChurnWritesNoSeriesTwice(t *testing.T) {
	e := storetest.New(t, storetest.Options{})
	const agents = 20
	for a := range agents {
		e.Consume(storetest.AgentBatch(a, 20))
	}
	stop := make(chan struct{})
	churned := make(chan int)
	go func() {
		rounds := 0
		defer func() { churned <- rounds }()
		for ; ; rounds++ {
			select {
			case <-stop:
				return
			default:
			}
			// The first agents report, the others go stale and are swept
			// (each removal moves a family's last series into its place),
			// and new agents take their place at the end of the families.
			e.Advance(time.Minute)
			for a := range agents / 2 {
				e.Consume(storetest.AgentBatch(a, 20))
			}
			e.Sweep(e.Now() - int64(30*time.Second))
			for a := range agents / 2 {
				e.Consume(storetest.AgentBatch((rounds+1)*agents+a, 20))
			}
		}
	}()
	scrapes := 40
	if storetest.RaceEnabled {
		scrapes = 10
	}
	for range scrapes {
		var zipped bytes.Buffer
		require.NoError(t, exposition.Write(&zipped, e.Store, exposition.Request{Format: exposition.Text, Options: e.Expo, Escaping: model.UnderscoreEscaping, Parts: exposition.Parts{Codec: &gzipParts{level: DefaultGzipLevel}, Workers: 3, PartLines: 50}}))
		zr, err := gzip.NewReader(&zipped)
		require.NoError(t, err)
		body, err := io.ReadAll(zr)
		require.NoError(t, err)
		families, err := storetest.DecodeText(body)
		require.NoError(t, err)
		require.NoError(t, storetest.CheckFamilies(families))
	}
	close(stop)
	assert.Positive(t, <-churned, "the store churned during the scrapes")
}

// TestClosedPartsHoldOnlyTheirBytes: a protobuf family cut across many parts
// keeps its closed parts until its length is known; each must hold its
// deflated bytes, not its deflate writer (about 1 MiB), or a scrape of a
// large family holds hundreds of MiB.
func TestClosedPartsHoldOnlyTheirBytes(t *testing.T) {
	const parts = 100
	line := bytes.Repeat([]byte(`x{a="b"} 1`+"\n"), 100)
	codec := &gzipParts{level: DefaultGzipLevel}
	held := make([]io.WriteCloser, 0, parts)
	before := heapInUse()
	for range parts {
		p := codec.Part()
		_, err := p.Write(line)
		require.NoError(t, err)
		require.NoError(t, p.Close())
		held = append(held, p)
	}
	grown := heapInUse() - before
	assert.Less(t, grown, int64(parts*64<<10), "%d closed parts hold %d bytes", parts, grown)

	var out bytes.Buffer
	require.NoError(t, codec.Begin(&out))
	for _, p := range held {
		require.NoError(t, codec.Emit(&out, p))
	}
	require.NoError(t, codec.End(&out))
	zr, err := gzip.NewReader(&out)
	require.NoError(t, err)
	got, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.Equal(t, bytes.Repeat(line, parts), got)
}

func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
