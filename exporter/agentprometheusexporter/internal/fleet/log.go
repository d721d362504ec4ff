package fleet // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/fleet"

import (
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Drop is why a packet or message from the cluster was dropped.
type Drop uint8

const (
	// DropUnauthenticated: not encrypted with the fleet's key (or not
	// encrypted at all), or with another cluster's label.
	DropUnauthenticated Drop = iota
	// DropMalformed: it decrypted, but is not a valid message.
	DropMalformed
	// DropOverloaded: a departure arrived while the exporter had a backlog
	// of them; the resource expires instead.
	DropOverloaded
	numDrops
)

var dropNames = [numDrops]string{"unauthenticated", "malformed", "overloaded"}

func (d Drop) String() string { return dropNames[d] }

// NumDrops is the number of Drop values.
const NumDrops = int(numDrops)

// memberlist says that it dropped a packet only in its log: these are the
// lines it writes then (memberlist v0.7.0, net.go), by reason.
var dropLines = []struct {
	text string
	drop Drop
}{
	{"Decrypt packet failed", DropUnauthenticated},
	{"No installed keys could decrypt", DropUnauthenticated},
	{"unacceptable label", DropUnauthenticated},
	{"Encryption is configured but remote state is not encrypted", DropUnauthenticated},
	{"Failed to decode", DropMalformed},
	{"Failed to decompress", DropMalformed},
	{"missing message type byte", DropMalformed},
	{"invalid checksum", DropMalformed},
	{"not supported", DropMalformed},
	{"Received invalid msgType", DropMalformed},
	{"truncated messages", DropMalformed},
	{"failed to receive", DropMalformed},
	{"Failed to read remote state", DropMalformed},
	{"Failed to receive user message", DropMalformed},
}

// logEvery bounds how often a kind of dropped packet is logged: anyone who
// can reach the gossip port can send them.
const logEvery = 10 * time.Second

// logWriter takes memberlist's log lines ("[LEVEL] memberlist: ..."), counts
// the dropped packets among them and writes the rest to the collector's
// logger at their level.
type logWriter struct {
	logger *zap.Logger
	stats  *Stats

	mu     sync.Mutex
	logged [numDrops]time.Time
}

func (w *logWriter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	level, msg := "INFO", line
	if strings.HasPrefix(line, "[") {
		if end := strings.IndexByte(line, ']'); end > 0 {
			level, msg = line[1:end], strings.TrimSpace(line[end+1:])
		}
	}
	for _, d := range dropLines {
		if strings.Contains(msg, d.text) {
			w.stats.Dropped[d.drop].Add(1)
			if w.allow(d.drop) {
				w.logger.Warn("Dropped a packet from the fleet's gossip port; more are counted, not logged, for a while",
					zap.String("reason", d.drop.String()), zap.String("memberlist", msg))
			}
			return len(p), nil
		}
	}
	switch level {
	case "DEBUG":
		w.logger.Debug(msg)
	case "INFO":
		w.logger.Info(msg)
	case "WARN":
		w.logger.Warn(msg)
	default:
		w.logger.Error(msg)
	}
	return len(p), nil
}

func (w *logWriter) allow(d Drop) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	if now.Sub(w.logged[d]) < logEvery {
		return false
	}
	w.logged[d] = now
	return true
}
