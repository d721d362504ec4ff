package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
)

func TestParseMix(t *testing.T) {
	mix, err := parseMix("slow=2, ok=20,not_found=0,unimplemented=3")
	require.NoError(t, err)
	var got []string
	for _, s := range mix {
		got = append(got, s.kind.name)
		if s.kind.name == "slow" {
			assert.Equal(t, 2, s.count)
			assert.Equal(t, "grpc.testing.TestService/CacheableUnaryCall", s.kind.method)
		}
	}
	assert.Equal(t, []string{"slow", "ok", "unimplemented"}, got, "order kept, zero counts left out")

	for _, bad := range []string{"", "ok", "ok=x", "ok=-1", "fast=1", "ok=1,ok=2", "ok=0"} {
		_, err := parseMix(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestStatusNamesAreUpperSnake(t *testing.T) {
	assert.Equal(t, "NOT_FOUND", statusName(codes.NotFound))
	assert.Equal(t, "CANCELLED", statusName(codes.Canceled))
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		assert.Regexp(t, "^[A-Z_]+$", statusName(c), "every gRPC status code")
	}
	assert.Equal(t, "Code(17)", statusName(17), "a code gRPC does not define")
}

func TestParseFlagsRejects(t *testing.T) {
	for _, args := range [][]string{
		{"--agents", "0"},
		{"--rounds", "-1"},
		{"--calls", "nope=1"},
		{"--slow", "20s"},
		{"extra"},
	} {
		_, err := parseFlags(args)
		assert.Error(t, err, "%q", args)
	}
	cfg, err := parseFlags([]string{"--agents", "3", "--calls", "ok=1"})
	require.NoError(t, err)
	assert.Equal(t, 3, cfg.agents)
	assert.Len(t, cfg.mix, 1)
}
