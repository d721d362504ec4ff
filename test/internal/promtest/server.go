package promtest

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/internal/testnet"
	"github.com/statsgate/statsgate/test/internal/proctest"
)

// Server is a Prometheus server started by a test.
type Server struct {
	API
	Addr string
	Proc *proctest.Proc
}

// Start runs the Prometheus binary bin on config (the content of
// prometheus.yml), with its TSDB in dir, and waits until it is ready. args
// are added to the command line (feature flags, lookback delta...).
func Start(t testing.TB, dir, name, bin, config string, args ...string) *Server {
	t.Helper()
	cfg := filepath.Join(dir, name+".yml")
	require.NoError(t, os.WriteFile(cfg, []byte(config), 0o600))
	addr := testnet.FreeEndpoint(t)
	p := proctest.Start(t, dir, name, nil, bin, append([]string{
		"--config.file=" + cfg,
		"--storage.tsdb.path=" + filepath.Join(dir, name+"-tsdb"),
		"--web.listen-address=" + addr,
	}, args...)...)
	s := &Server{API: New(addr), Addr: addr, Proc: p}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s's targets:\n%s", name, s.TargetState())
		}
	})
	proctest.Poll(t, 60*time.Second, name+" ready", func() error {
		if err := p.Running(); err != nil {
			return err
		}
		resp, err := http.Get("http://" + addr + "/-/ready")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/-/ready: %d", resp.StatusCode)
		}
		return nil
	})
	return s
}

// WaitUp waits until Prometheus has scraped every one of n targets of job
// successfully. Prometheus applies new targets only every 5 s.
func (s *Server) WaitUp(t testing.TB, job string, n int, timeout time.Duration) {
	t.Helper()
	proctest.Poll(t, timeout, fmt.Sprintf("%d targets of %s up", n, job), func() error {
		up, err := s.Floats(fmt.Sprintf(`up{job=%q}`, job), "instance")
		if err != nil {
			return err
		}
		if len(up) != n {
			return fmt.Errorf("up: %v", up)
		}
		for inst, v := range up {
			if v != 1 {
				return errors.New(inst + " is down")
			}
		}
		return nil
	})
}

// WaitScrapedAfter waits until every target of job has been scraped
// successfully at or after since; the last scrape's start is the time of
// its up sample.
func (s *Server) WaitScrapedAfter(t testing.TB, job string, since time.Time, timeout time.Duration) {
	t.Helper()
	proctest.Poll(t, timeout, "a scrape of every "+job+" target after "+since.Format(time.StampMilli), func() error {
		// timestamp() of a plain selector is the scrape's start; of any
		// other expression (up == 1) it would be the evaluation time.
		ts, err := s.Floats(fmt.Sprintf(`timestamp(up{job=%q})`, job), "instance")
		if err != nil {
			return err
		}
		up, err := s.Floats(fmt.Sprintf(`up{job=%q}`, job), "instance")
		if err != nil {
			return err
		}
		if len(ts) == 0 {
			return errors.New("no target")
		}
		for inst, v := range ts {
			if v < float64(since.UnixMilli())/1000 || up[inst] != 1 {
				return fmt.Errorf("%s last scraped at %.3f (up %v)", inst, v, up[inst])
			}
		}
		return nil
	})
}

// SelfMetric sums the values of one of the server's own metrics (a counter
// or gauge on its /metrics), e.g. prometheus_target_scrapes_sample_out_of_order_total.
func (s *Server) SelfMetric(name string) (float64, error) {
	resp, err := s.Client.Get("http://" + s.Addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, err
	}
	var sum float64
	for _, m := range fams[name].GetMetric() {
		sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
	}
	return sum, nil
}
