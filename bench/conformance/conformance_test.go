package conformance

import (
	"os"
	"testing"
)

// contribAgain is a second contrib, named apart in failure messages.
var contribAgain = target{name: "contrib-2", start: startContrib}

// TestHarnessSelfCheck runs contrib against a second contrib on every case.
// It proves the harness and the normaliser sound: any failure here is a bug
// of the harness or a nondeterminism of contrib, not of our exporter.
func TestHarnessSelfCheck(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Two contribs agree on everything the cases compare, so the
			// hooks for our deliberate differences do not apply.
			tc.differences = nil
			switch tc.expect {
			case expectReferenceInvalid:
				runReferenceInvalid(t, tc)
				return
			case expectNondeterministic:
				tc.check = nil
			}
			run(t, tc, contribTarget, contribAgain)
		})
	}
}

// TestConformance runs contrib against our exporter on every case.
func TestConformance(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run(t, tc, contribTarget, oursTarget)
		})
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	removeContribBinary()
	os.Exit(code)
}
