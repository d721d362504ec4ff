package common

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// SlowCallDelay is how long CacheableUnaryCall sleeps before answering OK.
const SlowCallDelay = 60 * time.Millisecond

// testService implements grpc.testing.TestService with fixed behaviour:
//   - EmptyCall answers OK;
//   - UnaryCall answers with the status in response_status when it is set,
//     otherwise OK with a payload of response_size bytes;
//   - CacheableUnaryCall sleeps SlowCallDelay, then answers OK;
//   - StreamingOutputCall sends one message per response parameter, then OK;
//   - every other method is left to the embedded Unimplemented server.
type testService struct {
	testpb.UnimplementedTestServiceServer
}

func payload(n int32) *testpb.Payload {
	return &testpb.Payload{Type: testpb.PayloadType_COMPRESSABLE, Body: make([]byte, n)}
}

func (testService) EmptyCall(context.Context, *testpb.Empty) (*testpb.Empty, error) {
	return &testpb.Empty{}, nil
}

func (testService) UnaryCall(_ context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	if st := req.GetResponseStatus(); st != nil && st.GetCode() != 0 {
		return nil, status.Error(codes.Code(st.GetCode()), st.GetMessage())
	}
	return &testpb.SimpleResponse{Payload: payload(req.GetResponseSize())}, nil
}

func (testService) CacheableUnaryCall(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	select {
	case <-time.After(SlowCallDelay):
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return &testpb.SimpleResponse{Payload: payload(req.GetResponseSize())}, nil
}

func (testService) StreamingOutputCall(req *testpb.StreamingOutputCallRequest, stream testpb.TestService_StreamingOutputCallServer) error {
	for _, p := range req.GetResponseParameters() {
		if err := stream.Send(&testpb.StreamingOutputCallResponse{Payload: payload(p.GetSize())}); err != nil {
			return err
		}
	}
	return nil
}
