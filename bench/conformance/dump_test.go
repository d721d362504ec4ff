package conformance

import (
	"os"
	"testing"
)

// TestDumpContrib prints contrib's scrapes and log lines for every case, to
// see what the reference serves. Enable it with CONFORMANCE_DUMP=1 and -v.
func TestDumpContrib(t *testing.T) {
	if os.Getenv("CONFORMANCE_DUMP") == "" {
		t.Skip("set CONFORMANCE_DUMP=1 to print contrib's scrapes")
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := contribTarget.start(t, contribTarget.name, tc.config)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.send(tc.build()); err != nil {
				t.Fatal(err)
			}
			awaitApplied(r, tc)
			for _, f := range formatsFor(tc.config) {
				body, ct, err := scrape(r, f)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%s (%s):\n%s", f.name, ct, body)
			}
			if l := r.logs(); l != "" {
				t.Logf("logged:\n%s", l)
			}
		})
	}
}
