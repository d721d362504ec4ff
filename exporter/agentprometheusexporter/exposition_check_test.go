package agentprometheusexporter

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"

	"github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/storetest"
)

// The formats a scrape is checked in.
const (
	acceptText        = "text/plain;version=0.0.4"
	acceptOpenMetrics = "application/openmetrics-text;version=1.0.0"
	acceptProtobuf    = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"
)

// decodeExposition parses a scrape body with expfmt and then checks what
// expfmt's parsers leave to their callers: a family or series written
// twice, a label name twice in a series, histograms whose buckets disagree
// with their count, counters that are negative or NaN.
//
// expfmt has no OpenMetrics parser: its decoder reads OpenMetrics as text
// 0.0.4, which fails on exemplars and files _created samples as families of
// their own. An OpenMetrics body is therefore checked for the OpenMetrics
// syntax and rewritten into its text 0.0.4 equivalent first.
func decodeExposition(body []byte, contentType string) (map[string]*dto.MetricFamily, error) {
	format := expfmt.Format(contentType)
	if format.FormatType() == expfmt.TypeOpenMetrics {
		text, err := openMetricsAsText(body)
		if err != nil {
			return nil, err
		}
		body = text
	}
	families, err := decodeFamilies(expfmt.NewDecoder(bytes.NewReader(body), format))
	if err != nil {
		return nil, err
	}
	return families, storetest.CheckFamilies(families)
}

// decodeFamilies reads every family dec decodes, refusing a family written
// twice.
func decodeFamilies(dec expfmt.Decoder) (map[string]*dto.MetricFamily, error) {
	families := map[string]*dto.MetricFamily{}
	for {
		mf := &dto.MetricFamily{}
		err := dec.Decode(mf)
		if errors.Is(err, io.EOF) {
			return families, nil
		}
		if err != nil {
			return nil, err
		}
		if _, dup := families[mf.GetName()]; dup {
			return nil, fmt.Errorf("family %q is written twice", mf.GetName())
		}
		families[mf.GetName()] = mf
	}
}

// openMetricsAsText checks an OpenMetrics 1.0 body's own syntax (the final
// # EOF, no other comments than HELP, TYPE and UNIT, no empty lines) and
// rewrites it into text 0.0.4: counters named with their _total, unknown
// as untyped, UNIT lines, _created samples and exemplars left out, HELP
// unescaped from OpenMetrics' rules into text's.
func openMetricsAsText(body []byte) ([]byte, error) {
	lines := strings.Split(string(body), "\n")
	if len(lines) < 2 || lines[len(lines)-1] != "" || lines[len(lines)-2] != "# EOF" {
		return nil, errors.New("openmetrics: does not end with # EOF")
	}
	var out bytes.Buffer
	var help, family, typ string
	hasHelp := false
	for i, line := range lines[:len(lines)-2] {
		switch {
		case strings.HasPrefix(line, "# HELP "):
			name, text, _ := strings.Cut(line[len("# HELP "):], " ")
			if text, ok := unescapeOpenMetricsHelp(text); ok {
				help, hasHelp, family = text, true, name
			} else {
				return nil, fmt.Errorf("openmetrics line %d: bad escape in HELP", i+1)
			}
		case strings.HasPrefix(line, "# TYPE "):
			name, t, _ := strings.Cut(line[len("# TYPE "):], " ")
			if hasHelp && name != family {
				return nil, fmt.Errorf("openmetrics line %d: HELP for %q, TYPE for %q", i+1, family, name)
			}
			family, typ = name, t
			written := name
			switch t {
			case "counter":
				written += "_total"
			case "unknown":
				t = "untyped"
			}
			if hasHelp {
				out.WriteString("# HELP " + written + " " + strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(help) + "\n")
				hasHelp = false
			}
			out.WriteString("# TYPE " + written + " " + t + "\n")
		case strings.HasPrefix(line, "# UNIT "):
		case strings.HasPrefix(line, "#") || line == "":
			return nil, fmt.Errorf("openmetrics line %d: unexpected %q", i+1, line)
		default:
			name, labels, rest, ok := splitSample(line)
			if !ok {
				return nil, fmt.Errorf("openmetrics line %d: malformed sample %q", i+1, line)
			}
			if name == family+"_created" && (typ == "counter" || typ == "histogram" || typ == "summary") {
				continue
			}
			if j := strings.Index(rest, " # "); j >= 0 {
				rest = rest[:j] // the exemplar
			}
			// OpenMetrics timestamps are seconds, the text format's milliseconds.
			if value, ts, ok := strings.Cut(strings.TrimSpace(rest), " "); ok {
				secs, err := strconv.ParseFloat(ts, 64)
				if err != nil {
					return nil, fmt.Errorf("openmetrics line %d: timestamp %q: %w", i+1, ts, err)
				}
				rest = " " + value + " " + strconv.FormatInt(int64(math.Round(secs*1000)), 10)
			}
			out.WriteString(name + labels + rest + "\n")
		}
	}
	return out.Bytes(), nil
}

func unescapeOpenMetricsHelp(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i++; i == len(s) {
			return "", false
		}
		switch s[i] {
		case '\\', '"':
			b.WriteByte(s[i])
		case 'n':
			b.WriteByte('\n')
		default:
			return "", false
		}
	}
	return b.String(), true
}

// splitSample splits a sample line into its name, its label set with the
// braces (quoted values may hold braces and spaces) and the rest.
func splitSample(line string) (name, labels, rest string, ok bool) {
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return "", "", "", false
	}
	if line[i] == ' ' {
		return line[:i], "", line[i:], true
	}
	quoted := false
	for j := i + 1; j < len(line); j++ {
		switch c := line[j]; {
		case quoted && c == '\\':
			j++
		case c == '"':
			quoted = !quoted
		case !quoted && c == '}':
			return line[:i], line[i : j+1], line[j+1:], true
		}
	}
	return "", "", "", false
}

var (
	promtoolOnce sync.Once
	promtoolPath string
)

// promtool returns the path of promtool. Without it the caller skips, or
// fails when STATSGATE_REQUIRE_PROMTOOL=1 (make test sets it).
func promtool(t *testing.T) string {
	t.Helper()
	promtoolOnce.Do(func() { promtoolPath, _ = exec.LookPath("promtool") })
	if promtoolPath == "" && os.Getenv("STATSGATE_REQUIRE_PROMTOOL") == "1" {
		t.Fatal("promtool not found in PATH, and STATSGATE_REQUIRE_PROMTOOL=1")
	}
	return promtoolPath
}

// promtoolLint runs `promtool check metrics` on a text scrape. promtool
// (2.42) exits 1 when the exposition does not parse, 3 when it parses but
// has lint problems, printed one "<metric> <problem>" per line on stderr,
// and 0 otherwise. A parse error fails the test; the lint problems are
// returned for the caller to compare with the ones it expects.
func promtoolLint(t *testing.T, path string, text []byte) []string {
	t.Helper()
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit) && exit.ExitCode() == 3:
		problems := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		slices.Sort(problems)
		return problems
	default:
		require.NoError(t, err, "promtool check metrics failed:\n%s\non:\n%s", stderr.String(), text)
		return nil
	}
}
