package fleet

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/statsgate/statsgate/internal/agentmanifest"
)

// connLogFormat is the log-format of haproxy's otlp_grpc frontend. With
// option logasap haproxy writes the line once the connection reaches a
// server; one that no server took is written when it ends, with <NOSRV>:
//
//	conn <frontend> <client ip>:<client port> <backend>/<server> <accept unix time>.<ms> <termination state>
const connLogFormat = "conn %f %ci:%cp %b/%s %Ts.%ms %ts"

// grpcFrontend is the frontend the gRPC agents connect to.
const grpcFrontend = "otlp_grpc"

// noServer is haproxy's server name for a connection no server took.
const noServer = "<NOSRV>"

// haproxyConn is a connection as haproxy logged it (connLogFormat).
type haproxyConn struct {
	frontend string
	client   netip.AddrPort
	backend  string
	server   string
	accepted time.Time
	// state is haproxy's termination state: "--" when it was logged as it
	// reached its server.
	state string
}

// connLine matches connLogFormat; the client's address ends at its last
// colon, an IPv6 address having some.
var connLine = regexp.MustCompile(`^conn (\S+) (\S+):(\d+) ([^/\s]+)/(\S+) (\d+)\.(\d{3}) (\S+)$`)

// parseConnLog reads the connection lines of haproxy's output, and skips the
// rest (its warnings and alerts). A line that starts as one but does not
// parse is an error: the format changed and the parser did not.
func parseConnLog(r io.Reader) ([]haproxyConn, error) {
	var out []haproxyConn
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if !strings.HasPrefix(line, "conn ") {
			continue
		}
		m := connLine.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("line %d: not %q: %q", n, connLogFormat, line)
		}
		ip, err := netip.ParseAddr(m[2])
		if err != nil {
			return nil, fmt.Errorf("line %d: client address: %w", n, err)
		}
		port, err := strconv.ParseUint(m[3], 10, 16)
		if err != nil {
			return nil, fmt.Errorf("line %d: client port: %w", n, err)
		}
		sec, _ := strconv.ParseInt(m[6], 10, 64)
		ms, _ := strconv.ParseInt(m[7], 10, 64)
		out = append(out, haproxyConn{
			frontend: m[1], client: netip.AddrPortFrom(ip.Unmap(), uint16(port)),
			backend: m[4], server: m[5], accepted: time.UnixMilli(sec*1000 + ms), state: m[8],
		})
	}
	return out, sc.Err()
}

// readConnLog parses the connection lines of haproxy's output file.
func readConnLog(path string) ([]haproxyConn, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseConnLog(f)
}

// grpcExportReplicas returns, per agent and export of an OTLP/gRPC manifest,
// the replica that took the export: the server of the connection it came on
// (Export.Conn), as haproxy logged it in haproxyLog. A client address is
// used again over a long run: the connection is the last one accepted from
// it no later than the export was acknowledged. An export whose connection
// is not in the log, or reached no server, is an error.
func grpcExportReplicas(m agentmanifest.OTLP, haproxyLog string) ([][]string, error) {
	conns, err := readConnLog(haproxyLog)
	if err != nil {
		return nil, fmt.Errorf("haproxy's connection log: %w", err)
	}
	return replicasOf(m, conns)
}

// replicasOf is grpcExportReplicas on the parsed log.
func replicasOf(m agentmanifest.OTLP, conns []haproxyConn) ([][]string, error) {
	if m.Protocol != "grpc" {
		return nil, fmt.Errorf("%s: the agents export over %q: only gRPC exports have a connection", m.Service, m.Protocol)
	}
	byClient := map[netip.AddrPort][]haproxyConn{}
	for _, c := range conns {
		if c.frontend == grpcFrontend {
			byClient[c.client] = append(byClient[c.client], c)
		}
	}
	for _, cs := range byClient {
		slices.SortStableFunc(cs, func(a, b haproxyConn) int { return a.accepted.Compare(b.accepted) })
	}
	out := make([][]string, len(m.Agents))
	var errs []error
	exports := 0
	for i, a := range m.Agents {
		out[i] = make([]string, len(a.Exports))
		for j, e := range a.Exports {
			exports++
			server, err := serverOf(e, byClient)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s export %d at %s: %w", a.InstanceID, j, e.At.Format(time.RFC3339Nano), err))
				continue
			}
			out[i][j] = server
		}
	}
	if len(errs) > 0 {
		// The first few say enough.
		shown := errs[:min(len(errs), 5)]
		return out, fmt.Errorf("%d of %d exports not put on a replica:\n%w", len(errs), exports, errors.Join(shown...))
	}
	return out, nil
}

func serverOf(e agentmanifest.Export, byClient map[netip.AddrPort][]haproxyConn) (string, error) {
	if e.Conn == "" {
		return "", errors.New("the agent recorded no connection")
	}
	ap, err := netip.ParseAddrPort(e.Conn)
	if err != nil {
		return "", fmt.Errorf("connection: %w", err)
	}
	ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	cs := byClient[ap]
	// haproxy's accept time is cut to the millisecond: never after the
	// export it carried was acknowledged.
	k, _ := slices.BinarySearchFunc(cs, e.At, func(c haproxyConn, at time.Time) int {
		if c.accepted.After(at) {
			return 1
		}
		return -1
	})
	if k == 0 {
		return "", fmt.Errorf("no connection from %s accepted by then in haproxy's log (%d from it in all)", ap, len(cs))
	}
	c := cs[k-1]
	if c.server == noServer {
		return "", fmt.Errorf("the connection from %s accepted at %s reached no server (%s)", ap, c.accepted.Format(time.RFC3339Nano), c.state)
	}
	return c.server, nil
}

// setGRPCReplicas fills in the Replica of every export of an OTLP/gRPC
// manifest from haproxy's connection log, as the HTTP agents' manifests
// have it, for what reads it (movesOf, lostAtKill).
func setGRPCReplicas(m *agentmanifest.OTLP, haproxyLog string) error {
	replicas, err := grpcExportReplicas(*m, haproxyLog)
	if err != nil {
		return err
	}
	for i := range m.Agents {
		for j := range m.Agents[i].Exports {
			m.Agents[i].Exports[j].Replica = replicas[i][j]
		}
	}
	return nil
}
