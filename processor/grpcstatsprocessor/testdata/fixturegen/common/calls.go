package common

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// Full method names used by the call mix.
const (
	MethodEmptyCall           = "/grpc.testing.TestService/EmptyCall"
	MethodUnaryCall           = "/grpc.testing.TestService/UnaryCall"
	MethodCacheableUnaryCall  = "/grpc.testing.TestService/CacheableUnaryCall"
	MethodStreamingOutputCall = "/grpc.testing.TestService/StreamingOutputCall"
	// MethodNotRegistered is a method of the registered service that the
	// server does not have; the client invokes it without grpc.StaticMethod.
	MethodNotRegistered = "/grpc.testing.TestService/NotRegistered"
)

// Call is one line of the manifest: a run of identical calls.
type Call struct {
	FullMethod string `json:"full_method"`
	// Kind is "unary" or "server_streaming".
	Kind string `json:"kind"`
	// StatusCode is the canonical name of the code the client observed.
	StatusCode string `json:"status_code"`
	// StatusCodeNumber is the numeric gRPC code.
	StatusCodeNumber int `json:"status_code_number"`
	Count            int `json:"count"`
	// StaticMethod tells whether the client passed grpc.StaticMethod() (the
	// generated stubs do; the raw conn.Invoke calls do not).
	StaticMethod bool `json:"static_method"`
	// ServerRegistered tells whether the server has a handler for the method.
	ServerRegistered bool `json:"server_registered"`
	// MinDurationMillis is the least time the server spends in the handler.
	MinDurationMillis int `json:"min_duration_ms,omitempty"`
	// Messages sent by the server per call on a streaming call.
	ServerMessagesPerCall int `json:"server_messages_per_call,omitempty"`
	// Protocol is the wire protocol of the calls, for variants that speak
	// more than gRPC's ("grpc" or "connect"); empty means gRPC.
	Protocol string `json:"protocol,omitempty"`
}

// canonicalCodeNames are the gRPC status code names as the gRPC spec and
// OpenTelemetry write them. The main module names codes with the same table
// (internal/grpcstatus); this module keeps its own because requiring the
// main module would raise the library versions each variant pins to those
// of the main module.
var canonicalCodeNames = map[codes.Code]string{
	codes.OK:                 "OK",
	codes.Canceled:           "CANCELLED",
	codes.Unknown:            "UNKNOWN",
	codes.InvalidArgument:    "INVALID_ARGUMENT",
	codes.DeadlineExceeded:   "DEADLINE_EXCEEDED",
	codes.NotFound:           "NOT_FOUND",
	codes.AlreadyExists:      "ALREADY_EXISTS",
	codes.PermissionDenied:   "PERMISSION_DENIED",
	codes.ResourceExhausted:  "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION",
	codes.Aborted:            "ABORTED",
	codes.OutOfRange:         "OUT_OF_RANGE",
	codes.Unimplemented:      "UNIMPLEMENTED",
	codes.Internal:           "INTERNAL",
	codes.Unavailable:        "UNAVAILABLE",
	codes.DataLoss:           "DATA_LOSS",
	codes.Unauthenticated:    "UNAUTHENTICATED",
}

// CodeName returns the canonical name of a gRPC code.
func CodeName(c codes.Code) string {
	if n, ok := canonicalCodeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("CODE(%d)", uint32(c))
}

type step struct {
	call Call
	do   func(ctx context.Context, conn *grpc.ClientConn) error
}

// callMix is the fixed, ordered list of calls every variant makes.
func callMix() []step {
	unary := func(req *testpb.SimpleRequest) func(context.Context, *grpc.ClientConn) error {
		return func(ctx context.Context, conn *grpc.ClientConn) error {
			_, err := testpb.NewTestServiceClient(conn).UnaryCall(ctx, req)
			return err
		}
	}
	return []step{
		{
			call: Call{FullMethod: MethodEmptyCall, Kind: "unary", StatusCode: "OK", Count: 5, StaticMethod: true, ServerRegistered: true},
			do: func(ctx context.Context, conn *grpc.ClientConn) error {
				_, err := testpb.NewTestServiceClient(conn).EmptyCall(ctx, &testpb.Empty{})
				return err
			},
		},
		{
			call: Call{FullMethod: MethodUnaryCall, Kind: "unary", StatusCode: "OK", Count: 3, StaticMethod: true, ServerRegistered: true},
			do:   unary(&testpb.SimpleRequest{ResponseSize: 32, Payload: payload(16)}),
		},
		{
			call: Call{FullMethod: MethodUnaryCall, Kind: "unary", StatusCode: "NOT_FOUND", Count: 2, StaticMethod: true, ServerRegistered: true},
			do: unary(&testpb.SimpleRequest{ResponseSize: 32, Payload: payload(16),
				ResponseStatus: &testpb.EchoStatus{Code: int32(codes.NotFound), Message: "no such item"}}),
		},
		{
			call: Call{FullMethod: MethodNotRegistered, Kind: "unary", StatusCode: "UNIMPLEMENTED", Count: 2, StaticMethod: false, ServerRegistered: false},
			do: func(ctx context.Context, conn *grpc.ClientConn) error {
				return conn.Invoke(ctx, MethodNotRegistered, &testpb.Empty{}, &testpb.Empty{})
			},
		},
		{
			call: Call{FullMethod: MethodCacheableUnaryCall, Kind: "unary", StatusCode: "OK", Count: 1, StaticMethod: true, ServerRegistered: true,
				MinDurationMillis: int(SlowCallDelay / time.Millisecond)},
			do: func(ctx context.Context, conn *grpc.ClientConn) error {
				_, err := testpb.NewTestServiceClient(conn).CacheableUnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: 32, Payload: payload(16)})
				return err
			},
		},
		{
			call: Call{FullMethod: MethodStreamingOutputCall, Kind: "server_streaming", StatusCode: "OK", Count: 1, StaticMethod: true, ServerRegistered: true,
				ServerMessagesPerCall: 3},
			do: func(ctx context.Context, conn *grpc.ClientConn) error {
				stream, err := testpb.NewTestServiceClient(conn).StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{
					ResponseParameters: []*testpb.ResponseParameters{{Size: 8}, {Size: 16}, {Size: 32}},
				})
				if err != nil {
					return err
				}
				for {
					if _, err := stream.Recv(); err != nil {
						if errors.Is(err, io.EOF) {
							return nil
						}
						return err
					}
				}
			},
		},
	}
}

// runCallMix makes every call of the mix, one after the other, and returns
// what the client observed. It fails when an observed code differs from the
// planned one, so the manifest always matches the calls made.
func runCallMix(ctx context.Context, conn *grpc.ClientConn) ([]Call, error) {
	var out []Call
	for _, s := range callMix() {
		observed := s.call
		for i := 0; i < s.call.Count; i++ {
			callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			start := time.Now()
			err := s.do(callCtx, conn)
			elapsed := time.Since(start)
			cancel()
			code := status.Code(err)
			if name := CodeName(code); name != s.call.StatusCode {
				return nil, fmt.Errorf("call %d to %s: observed %s (%v), planned %s", i, s.call.FullMethod, name, err, s.call.StatusCode)
			}
			if s.call.MinDurationMillis > 0 && elapsed < time.Duration(s.call.MinDurationMillis)*time.Millisecond {
				return nil, fmt.Errorf("call to %s took %v, want at least %dms", s.call.FullMethod, elapsed, s.call.MinDurationMillis)
			}
			observed.StatusCodeNumber = int(code)
		}
		out = append(out, observed)
	}
	return out, nil
}
