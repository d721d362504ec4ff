package main

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// service answers EmptyCall with OK, UnaryCall with the status the request
// asks for, CacheableUnaryCall after a delay, and UnimplementedCall (through
// the embedded type) with UNIMPLEMENTED.
type service struct {
	testgrpc.UnimplementedTestServiceServer
	slow time.Duration
}

func (service) EmptyCall(context.Context, *testgrpc.Empty) (*testgrpc.Empty, error) {
	return &testgrpc.Empty{}, nil
}

func (service) UnaryCall(_ context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	if c := req.GetResponseStatus().GetCode(); c != 0 {
		return nil, status.Error(codes.Code(c), "as requested")
	}
	return &testgrpc.SimpleResponse{}, nil
}

func (s service) CacheableUnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	select {
	case <-time.After(s.slow):
		return &testgrpc.SimpleResponse{}, nil
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

// call makes one call of kind k.
func call(ctx context.Context, client testgrpc.TestServiceClient, k kind) error {
	var err error
	switch k.name {
	case "ok":
		_, err = client.EmptyCall(ctx, &testgrpc.Empty{})
	case "not_found":
		_, err = client.UnaryCall(ctx, &testgrpc.SimpleRequest{ResponseStatus: &testgrpc.EchoStatus{Code: int32(codes.NotFound), Message: "no such item"}})
	case "unimplemented":
		_, err = client.UnimplementedCall(ctx, &testgrpc.Empty{})
	case "slow":
		_, err = client.CacheableUnaryCall(ctx, &testgrpc.SimpleRequest{})
	default:
		panic("unknown kind " + k.name)
	}
	return err
}
