// Package commonconnect serves and calls the fixture generator's test
// service with connect-go, over the gRPC protocol and the Connect protocol,
// for the variants that capture connect-go's instrumentation (otelconnect).
//
// connect-go has no generated code for grpc.testing.TestService here, so
// each method is a connect.NewUnaryHandler / NewServerStreamHandler over
// the protobuf messages of google.golang.org/grpc/interop/grpc_testing, and
// each call a connect.NewClient: the procedures and messages on the wire are
// the same as the generated code's would be.
package commonconnect

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/statsgate/statsgate/processor/grpcstatsprocessor/testdata/fixturegen/common"
)

// Protocols are the wire protocols every call of the mix is made over, in
// this order.
var Protocols = []string{"grpc", "connect"}

// ShortDeadline is the deadline of the call planned to exceed it, and the
// time after which the client cancels the call planned to be canceled. The
// server's slow method sleeps common.SlowCallDelay, well beyond it.
const ShortDeadline = 20 * time.Millisecond

// Serve starts an h2c HTTP server with the test service's handlers, makes
// the call mix over each protocol of Protocols with one client each, stops
// the server and returns the calls made. The interceptor is registered on
// every handler and client.
func Serve(ctx context.Context, interceptor connect.Interceptor) ([]common.Call, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("test server listen: %w", err)
	}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: mux(connect.WithInterceptors(interceptor)), Protocols: protocols, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()

	h2c := new(http.Protocols)
	h2c.SetUnencryptedHTTP2(true)
	transport := &http.Transport{Protocols: h2c}
	httpClient := &http.Client{Transport: transport}
	base := "http://" + lis.Addr().String()

	var calls []common.Call
	var callErr error
	for _, protocol := range Protocols {
		opts := []connect.ClientOption{connect.WithInterceptors(interceptor)}
		if protocol == "grpc" {
			opts = append(opts, connect.WithGRPC())
		}
		c, err := runCallMix(ctx, httpClient, base, protocol, opts)
		if err != nil {
			callErr = err
			break
		}
		calls = append(calls, c...)
	}
	transport.CloseIdleConnections()
	shutdownCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return nil, fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return nil, fmt.Errorf("serve: %w", err)
	}
	return calls, callErr
}

// mux registers the test service's methods: the same behaviour as
// common's grpc-go implementation.
func mux(opts ...connect.HandlerOption) *http.ServeMux {
	m := http.NewServeMux()
	m.Handle(common.MethodEmptyCall, connect.NewUnaryHandler(common.MethodEmptyCall,
		func(context.Context, *connect.Request[testpb.Empty]) (*connect.Response[testpb.Empty], error) {
			return connect.NewResponse(&testpb.Empty{}), nil
		}, opts...))
	m.Handle(common.MethodUnaryCall, connect.NewUnaryHandler(common.MethodUnaryCall,
		func(_ context.Context, req *connect.Request[testpb.SimpleRequest]) (*connect.Response[testpb.SimpleResponse], error) {
			if st := req.Msg.GetResponseStatus(); st != nil && st.GetCode() != 0 {
				return nil, connect.NewError(connect.Code(st.GetCode()), errors.New(st.GetMessage()))
			}
			return connect.NewResponse(&testpb.SimpleResponse{Payload: payload(req.Msg.GetResponseSize())}), nil
		}, opts...))
	m.Handle(common.MethodCacheableUnaryCall, connect.NewUnaryHandler(common.MethodCacheableUnaryCall,
		func(ctx context.Context, req *connect.Request[testpb.SimpleRequest]) (*connect.Response[testpb.SimpleResponse], error) {
			// A deadline shorter than the work is refused at once: waiting
			// for it would race the client's own timer (its RST_STREAM
			// makes the server see canceled about half the time over gRPC).
			if d, ok := ctx.Deadline(); ok && time.Until(d) < common.SlowCallDelay {
				return nil, connect.NewError(connect.CodeDeadlineExceeded, errors.New("deadline shorter than the work"))
			}
			select {
			case <-time.After(common.SlowCallDelay):
			case <-ctx.Done():
				// As common's grpc-go service does (status.FromContextError):
				// a bare ctx.Err() would reach the interceptors as unknown.
				code := connect.CodeCanceled
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					code = connect.CodeDeadlineExceeded
				}
				return nil, connect.NewError(code, ctx.Err())
			}
			return connect.NewResponse(&testpb.SimpleResponse{Payload: payload(req.Msg.GetResponseSize())}), nil
		}, opts...))
	m.Handle(common.MethodStreamingOutputCall, connect.NewServerStreamHandler(common.MethodStreamingOutputCall,
		func(_ context.Context, req *connect.Request[testpb.StreamingOutputCallRequest], stream *connect.ServerStream[testpb.StreamingOutputCallResponse]) error {
			for _, p := range req.Msg.GetResponseParameters() {
				if err := stream.Send(&testpb.StreamingOutputCallResponse{Payload: payload(p.GetSize())}); err != nil {
					return err
				}
			}
			return nil
		}, opts...))
	return m
}

func payload(n int32) *testpb.Payload {
	return &testpb.Payload{Type: testpb.PayloadType_COMPRESSABLE, Body: make([]byte, n)}
}

type step struct {
	call common.Call
	// timeout is the call's deadline; cancelAfter, when set, cancels it.
	timeout, cancelAfter time.Duration
	do                   func(ctx context.Context) error
}

// callMix is common's call mix, then one call that exceeds its deadline and
// one the client cancels, both on the slow method.
func callMix(httpClient *http.Client, base string, opts []connect.ClientOption) []step {
	empty := connect.NewClient[testpb.Empty, testpb.Empty](httpClient, base+common.MethodEmptyCall, opts...)
	unary := connect.NewClient[testpb.SimpleRequest, testpb.SimpleResponse](httpClient, base+common.MethodUnaryCall, opts...)
	slow := connect.NewClient[testpb.SimpleRequest, testpb.SimpleResponse](httpClient, base+common.MethodCacheableUnaryCall, opts...)
	stream := connect.NewClient[testpb.StreamingOutputCallRequest, testpb.StreamingOutputCallResponse](httpClient, base+common.MethodStreamingOutputCall, opts...)
	missing := connect.NewClient[testpb.Empty, testpb.Empty](httpClient, base+common.MethodNotRegistered, opts...)
	unaryReq := func(req *testpb.SimpleRequest) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := unary.CallUnary(ctx, connect.NewRequest(req))
			return err
		}
	}
	slowCall := func(ctx context.Context) error {
		_, err := slow.CallUnary(ctx, connect.NewRequest(&testpb.SimpleRequest{ResponseSize: 32, Payload: payload(16)}))
		return err
	}
	const deadline = 5 * time.Second
	return []step{
		{call: common.Call{FullMethod: common.MethodEmptyCall, Kind: "unary", StatusCode: "OK", Count: 5, StaticMethod: true, ServerRegistered: true},
			timeout: deadline, do: func(ctx context.Context) error {
				_, err := empty.CallUnary(ctx, connect.NewRequest(&testpb.Empty{}))
				return err
			}},
		{call: common.Call{FullMethod: common.MethodUnaryCall, Kind: "unary", StatusCode: "OK", Count: 3, StaticMethod: true, ServerRegistered: true},
			timeout: deadline, do: unaryReq(&testpb.SimpleRequest{ResponseSize: 32, Payload: payload(16)})},
		{call: common.Call{FullMethod: common.MethodUnaryCall, Kind: "unary", StatusCode: "NOT_FOUND", Count: 2, StaticMethod: true, ServerRegistered: true},
			timeout: deadline, do: unaryReq(&testpb.SimpleRequest{ResponseSize: 32, Payload: payload(16),
				ResponseStatus: &testpb.EchoStatus{Code: int32(codes.NotFound), Message: "no such item"}})},
		{call: common.Call{FullMethod: common.MethodNotRegistered, Kind: "unary", StatusCode: "UNIMPLEMENTED", Count: 2, StaticMethod: false, ServerRegistered: false},
			timeout: deadline, do: func(ctx context.Context) error {
				_, err := missing.CallUnary(ctx, connect.NewRequest(&testpb.Empty{}))
				return err
			}},
		{call: common.Call{FullMethod: common.MethodCacheableUnaryCall, Kind: "unary", StatusCode: "OK", Count: 1, StaticMethod: true, ServerRegistered: true,
			MinDurationMillis: int(common.SlowCallDelay / time.Millisecond)},
			timeout: deadline, do: slowCall},
		{call: common.Call{FullMethod: common.MethodStreamingOutputCall, Kind: "server_streaming", StatusCode: "OK", Count: 1, StaticMethod: true, ServerRegistered: true,
			ServerMessagesPerCall: 3},
			timeout: deadline, do: func(ctx context.Context) error {
				s, err := stream.CallServerStream(ctx, connect.NewRequest(&testpb.StreamingOutputCallRequest{
					ResponseParameters: []*testpb.ResponseParameters{{Size: 8}, {Size: 16}, {Size: 32}},
				}))
				if err != nil {
					return err
				}
				for s.Receive() {
				}
				if err := s.Err(); err != nil {
					return err
				}
				return s.Close()
			}},
		{call: common.Call{FullMethod: common.MethodCacheableUnaryCall, Kind: "unary", StatusCode: "DEADLINE_EXCEEDED", Count: 1, StaticMethod: true, ServerRegistered: true},
			timeout: ShortDeadline, do: slowCall},
		{call: common.Call{FullMethod: common.MethodCacheableUnaryCall, Kind: "unary", StatusCode: "CANCELLED", Count: 1, StaticMethod: true, ServerRegistered: true},
			timeout: deadline, cancelAfter: ShortDeadline, do: slowCall},
	}
}

// runCallMix makes every call of the mix over one protocol, one after the
// other, and fails when a code the client observed differs from the plan.
// Status codes are named as gRPC spells them (CANCELLED), whatever the
// protocol: the manifest records the call, not a library's spelling.
func runCallMix(ctx context.Context, httpClient *http.Client, base, protocol string, opts []connect.ClientOption) ([]common.Call, error) {
	var out []common.Call
	for _, s := range callMix(httpClient, base, opts) {
		observed := s.call
		observed.Protocol = protocol
		for i := 0; i < s.call.Count; i++ {
			callCtx, cancel := context.WithTimeout(ctx, s.timeout)
			if s.cancelAfter > 0 {
				time.AfterFunc(s.cancelAfter, cancel)
			}
			start := time.Now()
			err := s.do(callCtx)
			elapsed := time.Since(start)
			cancel()
			code := codes.OK
			if err != nil {
				code = codes.Code(connect.CodeOf(err))
			}
			if name := common.CodeName(code); name != s.call.StatusCode {
				return nil, fmt.Errorf("%s call %d to %s: observed %s (%v), planned %s", protocol, i, s.call.FullMethod, name, err, s.call.StatusCode)
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
