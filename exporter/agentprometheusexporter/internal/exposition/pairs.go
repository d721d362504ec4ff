package exposition // import "github.com/statsgate/statsgate/exporter/agentprometheusexporter/internal/exposition"

// Pairs reads the pairs of a rendered label set (store.Series.Labels) for
// the packages that are not writers, such as the cardinality view: the
// writers' own pair reader, without allocating. Names and values are as
// rendered; promtext.AppendUnescaped undoes the escaping.
type Pairs struct{ r pairReader }

// ReadPairs returns a reader of the pairs of labels.
func ReadPairs(labels string) Pairs { return Pairs{r: readPairs(labels)} }

// Next returns the next pair; ok is false at the end or on a malformed set.
func (p *Pairs) Next() (name, value string, ok bool) { return p.r.next() }
