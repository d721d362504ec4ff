package grpcstatus

import (
	"testing"

	"google.golang.org/grpc/codes"
)

// TestEveryGRPCGoCode checks the table against grpc-go's codes: every code
// has its name, and grpc-go's spelling of it maps onto that name.
func TestEveryGRPCGoCode(t *testing.T) {
	want := map[codes.Code]string{
		codes.OK: "OK", codes.Canceled: "CANCELLED", codes.Unknown: "UNKNOWN",
		codes.InvalidArgument: "INVALID_ARGUMENT", codes.DeadlineExceeded: "DEADLINE_EXCEEDED",
		codes.NotFound: "NOT_FOUND", codes.AlreadyExists: "ALREADY_EXISTS",
		codes.PermissionDenied: "PERMISSION_DENIED", codes.ResourceExhausted: "RESOURCE_EXHAUSTED",
		codes.FailedPrecondition: "FAILED_PRECONDITION", codes.Aborted: "ABORTED",
		codes.OutOfRange: "OUT_OF_RANGE", codes.Unimplemented: "UNIMPLEMENTED",
		codes.Internal: "INTERNAL", codes.Unavailable: "UNAVAILABLE", codes.DataLoss: "DATA_LOSS",
		codes.Unauthenticated: "UNAUTHENTICATED",
	}
	if len(want) != Count {
		t.Fatalf("Count = %d, grpc-go has %d codes", Count, len(want))
	}
	for c, name := range want {
		if got, ok := Name(int64(c)); !ok || got != name {
			t.Errorf("Name(%d) = %q, %v; want %q", c, got, ok, name)
		}
		if got, ok := FromCamel(c.String()); !ok || got != name {
			t.Errorf("FromCamel(%q) = %q, %v; want %q", c.String(), got, ok, name)
		}
		if !Known(name) {
			t.Errorf("Known(%q) = false", name)
		}
	}
}

func TestOutsideTheTable(t *testing.T) {
	for _, c := range []int64{-1, int64(Count), 99} {
		if n, ok := Name(c); ok {
			t.Errorf("Name(%d) = %q, want none", c, n)
		}
	}
	for _, s := range []string{"", "NotAName", "NOT_FOUND", "Code(17)"} {
		if n, ok := FromCamel(s); ok {
			t.Errorf("FromCamel(%q) = %q, want none", s, n)
		}
	}
	for _, s := range []string{"", "NotFound", "not_found", "CANCELED"} {
		if Known(s) {
			t.Errorf("Known(%q) = true", s)
		}
	}
}
