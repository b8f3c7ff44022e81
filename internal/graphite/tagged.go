package graphite

import (
	"regexp"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
)

// Limits of tag expressions.
const (
	maxTagExprs   = 64
	maxTagExprLen = 4096
)

// GraphiteTags returns a series' Graphite tags: its labels except the
// internal ones (starting with "__") and a label called "name", with
// "name" set to the path (__name__), as graphite-web's TaggedSeries.
func GraphiteTags(lset labels.Labels) map[string]string {
	tags := map[string]string{}
	lset.Range(func(l labels.Label) {
		if l.Name == labels.MetricName {
			tags["name"] = l.Value
			return
		}
		if strings.HasPrefix(l.Name, "__") || l.Name == "name" {
			return
		}
		tags[l.Name] = l.Value
	})
	return tags
}

// SeriesName is the Graphite name of a series: its path, followed for a
// tagged series by ";tag=value" for each tag in tag order (graphite-web's
// TaggedSeries.format).
func SeriesName(lset labels.Labels) string {
	var b strings.Builder
	b.WriteString(lset.Get(labels.MetricName))
	lset.Range(func(l labels.Label) {
		if l.Name == labels.MetricName || strings.HasPrefix(l.Name, "__") || l.Name == "name" {
			return
		}
		b.WriteByte(';')
		b.WriteString(l.Name)
		b.WriteByte('=')
		b.WriteString(l.Value)
	})
	return b.String()
}

// FormatTagged formats tags ("name" is the path) as graphite-web's
// TaggedSeries.format: the path, then ";tag=value" sorted.
func FormatTagged(tags map[string]string) string {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		if k != "name" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(tags["name"])
	for _, k := range keys {
		b.WriteString(";" + k + "=" + tags[k])
	}
	return b.String()
}

// ParseTagged parses a carbon path with optional tags, "a.b;k=v;k2=v2",
// or an OpenMetrics one, `a.b{k="v",k2="v2"}`, into tags with "name" set
// to the path, validating as graphite-web's TaggedSeries.parse does.
func ParseTagged(path string) (map[string]string, error) {
	if strings.HasSuffix(path, `"}`) && strings.Contains(path, "{") {
		return parseOpenMetrics(path)
	}
	segs := strings.Split(path, ";")
	if segs[0] == "" {
		return nil, patternErrorf("cannot parse path %q: no metric found", path)
	}
	tags := map[string]string{}
	for _, seg := range segs[1:] {
		k, v, ok := strings.Cut(seg, "=")
		if !ok || k == "" {
			return nil, patternErrorf("cannot parse path %q: invalid segment %q", path, seg)
		}
		if err := validateTag(k, v); err != nil {
			return nil, patternErrorf("path %q: %v", path, err)
		}
		tags[k] = v
	}
	name := strings.TrimLeft(segs[0], "~")
	if name == "" {
		return nil, patternErrorf("cannot use metric name %q of path %q as tag value: empty after removing ~", segs[0], path)
	}
	tags["name"] = name
	return tags, nil
}

var openMetricsTag = regexp.MustCompile(`^([^=]+)="((?:[\\]["\\]|[^"\\])+)"(:?,|$)`)

func parseOpenMetrics(path string) (map[string]string, error) {
	metric, raw, _ := strings.Cut(path[:len(path)-1], "{")
	if metric == "" {
		return nil, patternErrorf("cannot parse path %q: no metric found", path)
	}
	tags := map[string]string{}
	for raw != "" {
		m := openMetricsTag.FindStringSubmatch(raw)
		if m == nil {
			return nil, patternErrorf("cannot parse path %q: invalid segment %q", path, raw)
		}
		k := m[1]
		v := strings.ReplaceAll(strings.ReplaceAll(m[2], `\"`, `"`), `\\`, `\`)
		if err := validateTag(k, v); err != nil {
			return nil, patternErrorf("path %q: %v", path, err)
		}
		tags[k] = v
		raw = raw[len(m[0]):]
	}
	name := strings.TrimLeft(metric, "~")
	if name == "" {
		return nil, patternErrorf("cannot use metric name %q of path %q as tag value: empty after removing ~", metric, path)
	}
	tags["name"] = name
	return tags, nil
}

// validateTag is graphite-web's TaggedSeries.validateTagAndValue.
func validateTag(tag, value string) error {
	if tag == "" {
		return patternErrorf("tag may not be empty")
	}
	if value == "" {
		return patternErrorf("value for tag %q may not be empty", tag)
	}
	if i := strings.IndexAny(tag, ";!^="); i >= 0 {
		return patternErrorf("character %q is not allowed in tag %q", tag[i], tag)
	}
	if strings.Contains(value, ";") {
		return patternErrorf(`character ";" is not allowed in value %q of tag %q`, value, tag)
	}
	if value[0] == '~' {
		return patternErrorf("tag values are not allowed to start with \"~\" in tag %q", tag)
	}
	return nil
}

// TagSpec is one seriesByTag expression: tag, operator (=, !=, =~, !=~)
// and value.
type TagSpec struct {
	Tag, Op, Value string
}

// ParseTagSpec parses "tag=value", "tag!=value", "tag=~regex" or
// "tag!=~regex" (graphite-web's parse_tagspec).
func ParseTagSpec(s string) (TagSpec, error) {
	if len(s) > maxTagExprLen {
		return TagSpec{}, patternErrorf("tag expression %.32q…: longer than %d bytes", s, maxTagExprLen)
	}
	i := strings.IndexAny(s, "!=")
	if i <= 0 || strings.ContainsAny(s[:i], ";") {
		return TagSpec{}, patternErrorf("invalid tag expression %q: want tag=value, tag!=value, tag=~regex or tag!=~regex", s)
	}
	ts := TagSpec{Tag: s[:i]}
	rest := s[i:]
	for _, op := range []string{"!=~", "!=", "=~", "="} {
		if strings.HasPrefix(rest, op) {
			ts.Op, ts.Value = op, rest[len(op):]
			break
		}
	}
	if ts.Op == "" || strings.Contains(ts.Value, ";") {
		return TagSpec{}, patternErrorf("invalid tag expression %q: want tag=value, tag!=value, tag=~regex or tag!=~regex", s)
	}
	return ts, nil
}

// Matcher translates the spec to a label matcher: tag "name" is
// __name__; a regex is anchored at the start only, as graphite-web's
// re.match (so "=~cpu" matches "cpu0"); "tag=" matches series without the
// tag, as in Prometheus.
func (ts TagSpec) Matcher() (*labels.Matcher, error) {
	name := ts.Tag
	if name == "name" {
		name = labels.MetricName
	}
	var mt labels.MatchType
	v := ts.Value
	switch ts.Op {
	case "=":
		mt = labels.MatchEqual
	case "!=":
		mt = labels.MatchNotEqual
	case "=~", "!=~":
		mt = labels.MatchRegexp
		if ts.Op == "!=~" {
			mt = labels.MatchNotRegexp
		}
		if _, err := regexp.Compile(v); err != nil {
			return nil, patternErrorf("tag expression %s%s%s: bad regular expression: %v", ts.Tag, ts.Op, ts.Value, err)
		}
		v = "(?:" + v + ").*"
	default:
		return nil, patternErrorf("tag expression %s%s%s: unknown operator %q", ts.Tag, ts.Op, ts.Value, ts.Op)
	}
	m, err := labels.NewMatcher(mt, name, v)
	if err != nil {
		return nil, patternErrorf("tag expression %s%s%s: %v", ts.Tag, ts.Op, ts.Value, err)
	}
	return m, nil
}

// TagMatchers parses seriesByTag expressions into label matchers. As in
// graphite-web, at least one must not match the empty value (else it
// would select every series).
func TagMatchers(exprs []string) ([]*labels.Matcher, error) {
	if len(exprs) == 0 {
		return nil, patternErrorf("no tag expressions")
	}
	if len(exprs) > maxTagExprs {
		return nil, patternErrorf("%d tag expressions: at most %d", len(exprs), maxTagExprs)
	}
	ms := make([]*labels.Matcher, 0, len(exprs))
	allEmpty := true
	for _, e := range exprs {
		ts, err := ParseTagSpec(e)
		if err != nil {
			return nil, err
		}
		m, err := ts.Matcher()
		if err != nil {
			return nil, err
		}
		if !m.Matches("") {
			allEmpty = false
		}
		ms = append(ms, m)
	}
	if allEmpty {
		return nil, patternErrorf("tag expressions %q: at least one must not match the empty value", exprs)
	}
	return ms, nil
}
