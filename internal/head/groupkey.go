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
		return tagSetKey(lset)
	}
	name := lset.Get(labels.MetricName)
	if graphiteDepth > 0 {
		if i := nthIndex(name, '.', graphiteDepth); i > 0 && i < len(name)-1 {
			return keyGraphite + name[:i]
		}
	}
	return keySingleton + lset.String()
}

// tagSetKey is the key of the tag-set group of the labels of lset but
// __name__.
func tagSetKey(lset labels.Labels) string {
	var b strings.Builder
	b.WriteString(keyTagSet)
	lset.Range(func(l labels.Label) {
		if l.Name != labels.MetricName {
			writeQuoted(&b, l.Name, l.Value)
		}
	})
	return b.String()
}

// isTagSetKey reports whether key is tagSetKey(tags), without allocating
// (unless a value needs quoting).
func isTagSetKey(key string, tags labels.Labels) bool {
	rest, ok := strings.CutPrefix(key, keyTagSet)
	tags.Range(func(l labels.Label) {
		if !ok || l.Name == labels.MetricName {
			return
		}
		var v string
		if v, ok = strings.CutPrefix(rest, l.Name); !ok {
			return
		}
		if v, ok = strings.CutPrefix(v, "="); !ok {
			return
		}
		if v, ok = strings.CutPrefix(v, quote(l.Value)); !ok {
			return
		}
		rest, ok = strings.CutPrefix(v, ",")
	})
	return ok && rest == ""
}

// parseTagSetKey returns the labels whose tagSetKey is key, and false if
// key is not a tag-set key.
func parseTagSetKey(key string) (labels.Labels, bool) {
	rest, ok := strings.CutPrefix(key, keyTagSet)
	if !ok {
		return labels.EmptyLabels(), false
	}
	var ls []labels.Label
	for rest != "" {
		eq := strings.IndexByte(rest, '=')
		if eq <= 0 {
			return labels.EmptyLabels(), false
		}
		name := rest[:eq]
		rest = rest[eq+1:]
		var v strings.Builder
		for {
			if rest == "" {
				return labels.EmptyLabels(), false // no closing ','
			}
			c := rest[0]
			rest = rest[1:]
			if c == ',' {
				break
			}
			if c == '\\' {
				if rest == "" {
					return labels.EmptyLabels(), false
				}
				c, rest = rest[0], rest[1:]
			}
			v.WriteByte(c)
		}
		ls = append(ls, labels.Label{Name: name, Value: v.String()})
	}
	out := labels.New(ls...)
	if _, dup := out.HasDuplicateLabelNames(); dup || tagSetKey(out) != key { // not in order, a __name__, duplicates, …
		return labels.EmptyLabels(), false
	}
	return out, true
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
