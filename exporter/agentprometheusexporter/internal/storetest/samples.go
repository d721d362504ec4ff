package storetest

// SampleLines counts the lines written to it that are not comments: the
// samples of a text exposition.
type SampleLines struct {
	Samples int
	inLine  bool
}

func (c *SampleLines) Write(p []byte) (int, error) {
	for _, b := range p {
		switch {
		case !c.inLine:
			c.inLine = true
			if b != '#' {
				c.Samples++
			}
			if b == '\n' {
				c.inLine = false
			}
		case b == '\n':
			c.inLine = false
		}
	}
	return len(p), nil
}
