package head

import (
	"strings"

	"github.com/prometheus/prometheus/model/labels"
)

// Group key prefixes. A key is a stable string: equal keys mean one group.
const (
	keyGroupBy   = "g:" // values of the group_by labels
	keyTagSet    = "t:" // every label but __name__ (Influx tag set)
	keyGraphite  = "p:" // Graphite path prefix
	keySingleton = "s:" // a group of one series
	keyMoved     = "m:" // a series moved to a group of its own
)

// GroupKey returns the key of the group a new series belongs to (DESIGN §1):
//   - if any of groupBy is set, the values of the groupBy labels;
//   - else, if the series has labels besides __name__, all of them (the tag
//     set of an Influx line, whose fields are one row);
//   - else, if __name__ is a Graphite path with more than depth components,
//     its first depth components;
//   - else the series alone.
//
// It is a pure function of its arguments.
func GroupKey(lset labels.Labels, groupBy []string, graphiteDepth int) string {
	var b strings.Builder
	found := false
	for _, name := range groupBy {
		if v := lset.Get(name); v != "" {
			found = true
			break
		}
	}
	if found {
		b.WriteString(keyGroupBy)
		for _, name := range groupBy {
			writeQuoted(&b, name, lset.Get(name))
		}
		return b.String()
	}
	hasTags := false
	lset.Range(func(l labels.Label) {
		if l.Name != labels.MetricName {
			hasTags = true
		}
	})
	if hasTags {
		b.WriteString(keyTagSet)
		lset.Range(func(l labels.Label) {
			if l.Name != labels.MetricName {
				writeQuoted(&b, l.Name, l.Value)
			}
		})
		return b.String()
	}
	name := lset.Get(labels.MetricName)
	if graphiteDepth > 0 {
		if i := nthIndex(name, '.', graphiteDepth); i > 0 && i < len(name)-1 {
			return keyGraphite + name[:i]
		}
	}
	return keySingleton + lset.String()
}

// MovedKey is the key of the group of its own a misfit series moves to.
func MovedKey(lset labels.Labels) string { return keyMoved + lset.String() }

func writeQuoted(b *strings.Builder, name, value string) {
	b.WriteString(name)
	b.WriteByte('=')
	b.WriteString(quote(value))
	b.WriteByte(',')
}

// quote escapes the separators so that distinct label tuples never give the
// same key.
func quote(s string) string {
	if !strings.ContainsAny(s, `,"\`) {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `,`, `\,`, `"`, `\"`)
	return r.Replace(s)
}

// nthIndex returns the index of the n-th occurrence of c in s, or -1.
func nthIndex(s string, c byte, n int) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			n--
			if n == 0 {
				return i
			}
		}
	}
	return -1
}
