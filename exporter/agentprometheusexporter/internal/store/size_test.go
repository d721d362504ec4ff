package store

import (
	"testing"
	"unsafe"
)

// A series fills the 128-byte size class: every field added to it costs
// 16 bytes a series more (the next class is 144), at a million series 16 MB.
func TestSeriesFitsItsSizeClass(t *testing.T) {
	if size := unsafe.Sizeof(Series{}); size > 128 {
		t.Errorf("a Series takes %d bytes, more than its 128-byte size class", size)
	}
}
