package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
)

// kind is one sort of call the agent makes: a method of the test service
// and the status its handler answers with.
type kind struct {
	name   string
	method string // full method without the leading slash, as rpc.method shows it
	status codes.Code
}

// kinds are the calls --calls can ask for. UnimplementedCall is registered
// (the generated Unimplemented server answers it), so the server side records
// it; grpc-go records no server duration for methods that are not registered.
var kinds = []kind{
	{"ok", strings.TrimPrefix(testgrpc.TestService_EmptyCall_FullMethodName, "/"), codes.OK},
	{"not_found", strings.TrimPrefix(testgrpc.TestService_UnaryCall_FullMethodName, "/"), codes.NotFound},
	{"unimplemented", strings.TrimPrefix(testgrpc.TestService_UnimplementedCall_FullMethodName, "/"), codes.Unimplemented},
	{"slow", strings.TrimPrefix(testgrpc.TestService_CacheableUnaryCall_FullMethodName, "/"), codes.OK},
}

// slowMethod is the method whose handler takes --slow.
func slowMethod() string {
	return kinds[slices.IndexFunc(kinds, func(k kind) bool { return k.name == "slow" })].method
}

// describeKinds says, for --help, which call each kind makes.
func describeKinds() string {
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s (%s -> %s)", k.name, k.method, statusName(k.status)))
	}
	return strings.Join(parts, ", ") + "; slow takes --slow"
}

func kindNames() []string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.name
	}
	return names
}

// step is how many calls of one kind each round makes.
type step struct {
	kind  kind
	count int
}

// parseMix reads a --calls value such as "ok=20,not_found=5,slow=2". Kinds
// keep the order given; a kind may appear once.
func parseMix(s string) ([]step, error) {
	var mix []step
	seen := map[string]bool{}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, n, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want kind=count", part)
		}
		i := slices.IndexFunc(kinds, func(k kind) bool { return k.name == name })
		if i < 0 {
			return nil, fmt.Errorf("%q: unknown kind %q (want one of %s)", part, name, strings.Join(kindNames(), ", "))
		}
		if seen[name] {
			return nil, fmt.Errorf("%q: kind %q given twice", part, name)
		}
		seen[name] = true
		count, err := strconv.Atoi(n)
		if err != nil || count < 0 {
			return nil, fmt.Errorf("%q: count must be a non-negative integer", part)
		}
		if count > 0 {
			mix = append(mix, step{kinds[i], count})
		}
	}
	if len(mix) == 0 {
		return nil, fmt.Errorf("no calls in %q", s)
	}
	return mix, nil
}
