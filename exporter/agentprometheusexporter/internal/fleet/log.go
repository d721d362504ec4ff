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
// lines it writes then (memberlist v0.7.0, net.go), lower-cased, by reason.
var dropLines = []struct {
	text string
	drop Drop
}{
	{"decrypt packet failed", DropUnauthenticated},
	{"no installed keys could decrypt", DropUnauthenticated},
	{"unsupported encryption version", DropUnauthenticated},
	{"unacceptable label", DropUnauthenticated},
	{"encryption is configured but remote state is not encrypted", DropUnauthenticated},
	{"remote state is encrypted and encryption is not configured", DropUnauthenticated},
	{"failed to decode", DropMalformed},
	{"failed to decompress", DropMalformed},
	{"missing message type byte", DropMalformed},
	{"invalid checksum", DropMalformed},
	{"not supported", DropMalformed},
	{"received invalid msgtype", DropMalformed},
	{"truncated messages", DropMalformed},
	{"failed to receive", DropMalformed},
	{"failed to read remote state", DropMalformed},
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
	// closed: memberlist's goroutines may still write or report a member
	// after its Shutdown returns (a gossip round or a suspicion timer in
	// progress); nothing is logged then.
	closed bool
}

// emit runs log with the logger unless the logging has ended.
func (w *logWriter) emit(log func(*zap.Logger)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		log(w.logger)
	}
}

// close ends the logging; it returns once no Write is logging.
func (w *logWriter) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return len(p), nil
	}
	line := strings.TrimSpace(string(p))
	level, msg := "INFO", line
	if strings.HasPrefix(line, "[") {
		if end := strings.IndexByte(line, ']'); end > 0 {
			level, msg = line[1:end], strings.TrimSpace(line[end+1:])
		}
	}
	lower := strings.ToLower(msg)
	for _, d := range dropLines {
		// A join this node tried is its own failure, not a packet it dropped.
		if strings.Contains(lower, d.text) && !strings.Contains(lower, "failed to join") {
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

// allow says whether a drop may be logged now. Call with w.mu held.
func (w *logWriter) allow(d Drop) bool {
	now := time.Now()
	if now.Sub(w.logged[d]) < logEvery {
		return false
	}
	w.logged[d] = now
	return true
}
