package main

import "testing"

const sampleBody = `# HELP target_info Target metadata
# TYPE target_info gauge
target_info{host_name="h",job="bench/svc",instance="i"} 1
# HELP loadgen_queue_depth_f000 Items waiting in the queue.
# TYPE loadgen_queue_depth_f000 gauge
loadgen_queue_depth_f000{http_route="/a",job="bench/svc"} 0.5
loadgen_queue_depth_f000{http_route="/b",job="bench/svc"} 1.5
target_info_like_name 3

`

func TestExpoCounterEveryChunking(t *testing.T) {
	for split := 0; split <= len(sampleBody); split++ {
		c := newExpoCounter()
		_, _ = c.Write([]byte(sampleBody[:split]))
		_, _ = c.Write([]byte(sampleBody[split:]))
		if c.samples != 4 || c.targetInfo != 1 || c.comments != 4 || c.types != 2 || c.blank != 1 {
			t.Fatalf("split %d: samples %d target_info %d comments %d types %d blank %d", split, c.samples, c.targetInfo, c.comments, c.types, c.blank)
		}
		if !c.endsWithNewline() || c.partialLine() {
			t.Fatalf("split %d: complete body seen as cut", split)
		}
	}
}

func TestExpoCounterTruncated(t *testing.T) {
	cut := len(sampleBody) - 30 // inside the last loadgen_queue_depth_f000 line
	c := newExpoCounter()
	_, _ = c.Write([]byte(sampleBody[:cut]))
	if c.endsWithNewline() || !c.partialLine() {
		t.Fatalf("cut body not detected: ends newline %v partial %v", c.endsWithNewline(), c.partialLine())
	}
	if c.samples != 2 {
		t.Fatalf("partial line counted as a sample: %d", c.samples)
	}
	if empty := newExpoCounter(); empty.endsWithNewline() || empty.partialLine() {
		t.Fatal("empty body must not end with a newline nor have a partial line")
	}
}
