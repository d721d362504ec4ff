package main

import "bytes"

// expoCounter is an io.Writer that takes a Prometheus text exposition as it
// streams in and counts its lines without keeping the body: sample lines,
// comment lines (# HELP / # TYPE), target_info samples, and whether the body
// ends with a newline. A body cut off by the server (a write timeout, a
// closed connection) usually ends in the middle of a line; a trailing
// partial line is counted apart and never as a sample.
type expoCounter struct {
	bytes      int64
	lines      int64 // complete lines (ending in '\n')
	samples    int64 // complete lines that are neither comments nor blank
	comments   int64
	types      int64 // "# TYPE" lines: one per family
	targetInfo int64 // samples of target_info
	blank      int64
	last       byte

	// The first bytes of the current line, enough to classify it.
	prefix   [16]byte
	plen     int
	inPrefix bool // still collecting the current line's prefix
	started  bool // at least one byte of the current line was seen
}

var (
	targetInfoPrefix = []byte("target_info")
	typePrefix       = []byte("# TYPE ")
)

func newExpoCounter() *expoCounter { return &expoCounter{inPrefix: true} }

func (c *expoCounter) Write(p []byte) (int, error) {
	n := len(p)
	if n == 0 {
		return 0, nil
	}
	c.bytes += int64(n)
	c.last = p[n-1]
	for len(p) > 0 {
		if c.inPrefix {
			b := p[0]
			p = p[1:]
			if b == '\n' {
				c.endLine()
				continue
			}
			c.started = true
			c.prefix[c.plen] = b
			c.plen++
			if c.plen == len(c.prefix) {
				c.inPrefix = false
			}
			continue
		}
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			return n, nil
		}
		p = p[i+1:]
		c.endLine()
	}
	return n, nil
}

func (c *expoCounter) endLine() {
	c.lines++
	line := c.prefix[:c.plen]
	switch {
	case len(line) == 0:
		c.blank++
	case line[0] == '#':
		c.comments++
		if bytes.HasPrefix(line, typePrefix) {
			c.types++
		}
	default:
		c.samples++
		if bytes.HasPrefix(line, targetInfoPrefix) && (len(line) == len(targetInfoPrefix) || line[len(targetInfoPrefix)] == '{' || line[len(targetInfoPrefix)] == ' ') {
			c.targetInfo++
		}
	}
	c.plen = 0
	c.inPrefix = true
	c.started = false
}

// partialLine reports whether the body ended inside a line.
func (c *expoCounter) partialLine() bool { return c.started || !c.inPrefix }

// endsWithNewline reports whether the body is non-empty and its last byte is '\n'.
func (c *expoCounter) endsWithNewline() bool { return c.bytes > 0 && c.last == '\n' }
