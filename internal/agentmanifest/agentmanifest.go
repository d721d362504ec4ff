// Package agentmanifest is what the demo and test agents (cmd/grpcagent,
// cmd/otlpagent) write when they exit about what they counted, so that a
// test compares what a gateway and Prometheus show with the agents' own
// counts.
package agentmanifest // import "github.com/statsgate/statsgate/internal/agentmanifest"

import (
	"encoding/json"
	"os"
	"time"
)

// GRPC is what cmd/grpcagent's simulated agents did.
type GRPC struct {
	Service     string      `json:"service"`
	Gateway     string      `json:"gateway"`
	SlowMethod  string      `json:"slow_method"`
	SlowSeconds float64     `json:"slow_seconds"`
	Agents      []GRPCAgent `json:"agents"`
}

// GRPCAgent is one simulated gRPC agent's calls.
type GRPCAgent struct {
	InstanceID string  `json:"service_instance_id"`
	Rounds     int     `json:"rounds"`
	Calls      []Calls `json:"calls"`
}

// Calls counts one method × status. Server is what the server's interceptor
// saw its handlers return, Client what the client's calls returned.
type Calls struct {
	Method string `json:"method"`
	Status string `json:"status"`
	Server int    `json:"server"`
	Client int    `json:"client"`
	// ClientSeconds is the wall time of the client calls, summed: an upper
	// bound for the durations either side records for them.
	ClientSeconds float64 `json:"client_seconds"`
}

// OTLP is what cmd/otlpagent's simulated agents counted and what the
// gateway acknowledged.
type OTLP struct {
	Service     string      `json:"service"`
	Protocol    string      `json:"protocol"`
	Temporality string      `json:"temporality"`
	Bounds      []float64   `json:"bounds"`
	Agents      []OTLPAgent `json:"agents"`
}

// OTLPAgent is one simulated OTLP agent.
type OTLPAgent struct {
	InstanceID string `json:"service_instance_id"`
	// Counted is what the agent recorded, per kind.
	Counted []Values `json:"counted"`
	// Acked is what the acknowledged exports carried: the last cumulative
	// values, or the sum of the deltas.
	Acked []Values `json:"acked"`
	// Exports lists the acknowledged exports in order.
	Exports []Export `json:"exports"`
	// Failed lists when exports failed for good (after the SDK's retries):
	// with delta temporality, what they carried is lost.
	Failed []time.Time `json:"failed,omitempty"`
}

// Values are the counter and histogram of one kind: a total, or one delta.
type Values struct {
	Kind       string   `json:"kind"`
	Operations int64    `json:"operations"`
	Count      uint64   `json:"count"`
	Sum        float64  `json:"sum"`
	Buckets    []uint64 `json:"buckets"` // per bucket, not cumulative: one per bound, and the overflow
}

// Export is one acknowledged export.
type Export struct {
	At time.Time `json:"at"`
	// Point is the time of the points it carried.
	Point time.Time `json:"point"`
	// Replica is the gateway that answered, when the load balancer says so.
	Replica string `json:"replica,omitempty"`
	// Conn is, over gRPC, the local address (ip:port) of the connection
	// that carried the export: a load balancer's connection log tells
	// which gateway it reached.
	Conn string `json:"conn,omitempty"`
	// Deltas are the values the export carried, with delta temporality.
	Deltas []Values `json:"deltas,omitempty"`
}

// Write writes m as indented JSON to path ("-": stdout).
func Write(path string, m any) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if path == "-" {
		_, err = os.Stdout.Write(b)
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Read reads a manifest written by Write into m.
func Read(path string, m any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, m)
}
