package statsd

import (
	"strings"

	"github.com/prometheus/prometheus/model/labels"
)

// rec is one parsed value on its way from a listener to the aggregator.
// Its strings are substrings of one string per batch; the aggregator clones
// what it keeps.
type rec struct {
	key    string // series key: see appendKey
	member string // set member
	value  float64
	rate   float64
	typ    Type
	delta  bool
}

// Key separators: bytes that valid UTF-8 never holds, and sanitized names
// and validated tags are valid UTF-8.
const (
	sepTag   = 0xff // before each tag's name
	sepValue = 0xfe // between a tag's name and value
)

// appendKey appends the series key of m: its name, then per tag (sorted by
// name) 0xff name 0xfe value.
func appendKey(dst []byte, m *Metric) []byte {
	dst = append(dst, m.Name...)
	for _, t := range m.Tags {
		dst = append(dst, sepTag)
		dst = append(dst, t.Name...)
		dst = append(dst, sepValue)
		dst = append(dst, t.Value...)
	}
	return dst
}

// splitKey returns the name and the tags (as labels, sorted) of a key.
func splitKey(key string) (string, []labels.Label) {
	i := strings.IndexByte(key, sepTag)
	if i < 0 {
		return key, nil
	}
	name := key[:i]
	var tags []labels.Label
	for _, t := range strings.Split(key[i+1:], "\xff") {
		n, v, _ := strings.Cut(t, "\xfe")
		tags = append(tags, labels.Label{Name: n, Value: v})
	}
	return name, tags
}

// batcher turns the Metrics of a parser into recs sharing one string.
// Not safe for concurrent use.
type batcher struct {
	arena []byte
	pend  []pendRec
}

type pendRec struct {
	keyEnd, memEnd int // in arena; a rec's key starts where the previous rec's member ends
	value, rate    float64
	typ            Type
	delta          bool
}

func (b *batcher) add(m *Metric) {
	b.arena = appendKey(b.arena, m)
	keyEnd := len(b.arena)
	b.arena = append(b.arena, m.Member...)
	b.pend = append(b.pend, pendRec{keyEnd: keyEnd, memEnd: len(b.arena), value: m.Value, rate: m.Rate, typ: m.Type, delta: m.Delta})
}

func (b *batcher) len() int { return len(b.pend) }

// take returns the recs added since the last take.
func (b *batcher) take() []rec {
	if len(b.pend) == 0 {
		return nil
	}
	s := string(b.arena)
	out := make([]rec, len(b.pend))
	start := 0
	for i, p := range b.pend {
		out[i] = rec{key: s[start:p.keyEnd], member: s[p.keyEnd:p.memEnd], value: p.value, rate: p.rate, typ: p.typ, delta: p.delta}
		start = p.memEnd
	}
	b.arena, b.pend = b.arena[:0], b.pend[:0]
	return out
}
