package carbon

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/positive"
)

// Limits bound what one line or pickle entry may hold. Zero fields take the
// defaults below.
type Limits struct {
	// MaxPathLen is the longest path, tags included, in bytes (default 4096).
	MaxPathLen int
	// MaxTags is the most tags a path may carry (default 64).
	MaxTags int
	// MaxTagNameLen is the longest tag name in bytes (default 256).
	MaxTagNameLen int
	// MaxTagValueLen is the longest tag value in bytes (default 1024).
	MaxTagValueLen int
}

// Defaults of Limits.
const (
	DefaultMaxPathLen     = 4096
	DefaultMaxTags        = 64
	DefaultMaxTagNameLen  = 256
	DefaultMaxTagValueLen = 1024
)

func (l Limits) withDefaults() Limits {
	l.MaxPathLen = positive.Or(l.MaxPathLen, DefaultMaxPathLen)
	l.MaxTags = positive.Or(l.MaxTags, DefaultMaxTags)
	l.MaxTagNameLen = positive.Or(l.MaxTagNameLen, DefaultMaxTagNameLen)
	l.MaxTagValueLen = positive.Or(l.MaxTagValueLen, DefaultMaxTagValueLen)
	return l
}

// Sample is one data point as carbon would store it.
type Sample struct {
	// Path is the series' normalized Graphite path: the name (leading '~'
	// removed), then ";tag=value" for each tag, sorted as carbon's
	// TaggedSeries.format sorts them. Labels(Path) gives its labels.
	Path string
	T    int64 // Unix milliseconds
	V    float64
}

// ParseError says what was wrong with a line or pickle entry and where.
type ParseError struct {
	Field  string // "line", "path", "tag", "value", "timestamp"
	Offset int    // byte offset of the field in the line (or path)
	Msg    string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("%s at byte %d: %s", e.Field, e.Offset, e.Msg)
}

// ErrNaNValue is returned for a NaN value: carbon drops such points
// (MetricReceiver.metricReceived), and so does Aerie, counting them as
// rejected with reason "nan_value".
var ErrNaNValue = errors.New("NaN value: dropped, as carbon does")

// ParseLine parses one plaintext line "path value timestamp" (without its
// "\n") as carbon's MetricLineReceiver does: surrounding whitespace is
// stripped and exactly three whitespace-separated fields must remain; value
// and timestamp are Python floats ("1", "1.5", "1e3", "1_000", "inf", "nan");
// a timestamp that truncates to -1 means now (nowMs, Unix milliseconds);
// timestamps are seconds, stored in milliseconds rounded to the nearest.
// The line must be valid UTF-8, as carbon decodes it so.
func ParseLine(line []byte, nowMs int64, lim Limits) (Sample, error) {
	var f [3][]byte
	var off [3]int
	n := 0
	for i := 0; i < len(line); {
		if c := charClass[line[i]]; c == cSpace {
			i++
			continue
		} else if c == cHigh {
			if w, size := spaceAt(line, i); w {
				i += size
				continue
			}
		}
		start := i
		for i < len(line) {
			c := charClass[line[i]]
			if c == cOther {
				i++
				continue
			}
			if c == cSpace {
				break
			}
			w, size := spaceAt(line, i)
			if w {
				break
			}
			i += size
		}
		if n == 3 {
			return Sample{}, &ParseError{Field: "line", Offset: start, Msg: "more than 3 fields (want \"path value timestamp\")"}
		}
		f[n], off[n] = line[start:i], start
		n++
	}
	if n < 3 {
		return Sample{}, &ParseError{Field: "line", Offset: len(line), Msg: fmt.Sprintf("%d fields, want 3 (\"path value timestamp\")", n)}
	}
	if !utf8.Valid(line) {
		return Sample{}, &ParseError{Field: "line", Offset: invalidUTF8At(line), Msg: "not valid UTF-8"}
	}
	v, ok := parsePyFloat(f[1])
	if !ok {
		return Sample{}, &ParseError{Field: "value", Offset: off[1], Msg: fmt.Sprintf("%q is not a number", truncate(f[1], 64))}
	}
	ts, ok := parsePyFloat(f[2])
	if !ok {
		return Sample{}, &ParseError{Field: "timestamp", Offset: off[2], Msg: fmt.Sprintf("%q is not a number", truncate(f[2], 64))}
	}
	s, err := MakeSample(f[0], ts, v, nowMs, lim)
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			switch pe.Field {
			case "timestamp":
				pe.Offset = off[2]
			case "value":
				pe.Offset = off[1]
			default:
				pe.Offset += off[0]
			}
		}
		return Sample{}, err
	}
	return s, nil
}

// MakeSample checks and normalizes path and converts ts (Unix seconds; a
// value truncating to -1 means nowMs) to milliseconds: the common end of the
// plaintext and pickle receivers. A NaN value gives ErrNaNValue.
func MakeSample(path []byte, ts, v float64, nowMs int64, lim Limits) (Sample, error) {
	if math.IsNaN(ts) || math.IsInf(ts, 0) {
		return Sample{}, &ParseError{Field: "timestamp", Msg: fmt.Sprintf("%v is not a time", ts)}
	}
	var t int64
	if math.Trunc(ts) == -1 {
		t = nowMs
	} else {
		ms := math.Round(ts * 1000)
		if ms < math.MinInt64/2 || ms > math.MaxInt64/2 {
			return Sample{}, &ParseError{Field: "timestamp", Msg: fmt.Sprintf("%v seconds is out of range", ts)}
		}
		t = int64(ms)
	}
	p, err := NormalizePath(path, lim)
	if err != nil {
		return Sample{}, err
	}
	if math.IsNaN(v) {
		return Sample{}, ErrNaNValue
	}
	return Sample{Path: p, T: t, V: v}, nil
}

// NormalizePath checks a Graphite path and returns it as carbon's
// TaggedSeries.parse(path).path does: "name;tag=value;..." or the
// OpenMetrics form `name{tag="value",...}`, with the name's leading '~'
// removed, a tag called "name" dropped (the name is that tag), the other
// tags deduplicated (the last one wins) and sorted. Unlike carbon, which
// stores a path whose tags do not parse under the raw path, Aerie refuses
// it: such a path cannot become labels. Tag names may not start with "__"
// (reserved for Aerie's own labels).
func NormalizePath(path []byte, lim Limits) (string, error) {
	lim = lim.withDefaults()
	if len(path) > lim.MaxPathLen {
		return "", &ParseError{Field: "path", Msg: fmt.Sprintf("%d bytes, over the limit of %d", len(path), lim.MaxPathLen)}
	}
	if len(path) == 0 {
		return "", &ParseError{Field: "path", Msg: "empty"}
	}
	if !utf8.Valid(path) {
		return "", &ParseError{Field: "path", Offset: invalidUTF8At(path), Msg: "not valid UTF-8"}
	}
	if bytes.HasSuffix(path, []byte(`"}`)) && bytes.IndexByte(path, '{') >= 0 {
		return normalizeOpenMetrics(path, lim)
	}
	semi := bytes.IndexByte(path, ';')
	if semi < 0 {
		if path[0] != '~' {
			return string(path), nil
		}
		name, err := sanitizeName(path, 0)
		return string(name), err
	}
	name, err := sanitizeName(path[:semi], 0)
	if err != nil {
		return "", err
	}
	var buf [8]tag
	tags := buf[:0]
	for off := semi + 1; ; {
		end := bytes.IndexByte(path[off:], ';')
		if end < 0 {
			end = len(path)
		} else {
			end += off
		}
		seg := path[off:end]
		eq := bytes.IndexByte(seg, '=')
		if eq <= 0 {
			return "", &ParseError{Field: "tag", Offset: off, Msg: fmt.Sprintf("segment %q is not tag=value", truncate(seg, 64))}
		}
		tags, err = addTag(tags, seg[:eq], seg[eq+1:], off, lim)
		if err != nil {
			return "", err
		}
		if end == len(path) {
			break
		}
		off = end + 1
	}
	return formatPath(name, tags), nil
}

// tag aliases the parsed path (or, in the OpenMetrics form, an unescaped
// copy).
type tag struct{ name, value []byte }

// compareTags orders tags as carbon sorts their ";name=value" strings,
// without building them.
func compareTags(a, b tag) int {
	at, bt := [3][]byte{a.name, eqSign, a.value}, [3][]byte{b.name, eqSign, b.value}
	ai, bi := 0, 0 // part
	ao, bo := 0, 0 // offset in part
	for {
		for ai < 3 && ao == len(at[ai]) {
			ai, ao = ai+1, 0
		}
		for bi < 3 && bo == len(bt[bi]) {
			bi, bo = bi+1, 0
		}
		switch {
		case ai == 3 && bi == 3:
			return 0
		case ai == 3:
			return -1
		case bi == 3:
			return 1
		}
		if c, d := at[ai][ao], bt[bi][bo]; c != d {
			return int(c) - int(d)
		}
		ao++
		bo++
	}
}

var eqSign = []byte("=")

func addTag(tags []tag, name, value []byte, off int, lim Limits) ([]tag, error) {
	if err := validateTag(name, value, off, lim); err != nil {
		return nil, err
	}
	if string(name) == "name" {
		return tags, nil
	}
	for i := range tags {
		if bytes.Equal(tags[i].name, name) {
			tags[i].value = value
			return tags, nil
		}
	}
	if len(tags) == lim.MaxTags {
		return nil, &ParseError{Field: "tag", Offset: off, Msg: fmt.Sprintf("more than %d tags", lim.MaxTags)}
	}
	return append(tags, tag{name, value}), nil
}

// validateTag is carbon's TaggedSeries.validateTagAndValue plus Aerie's
// limits and reserved names.
func validateTag(name, value []byte, off int, lim Limits) error {
	switch {
	case len(name) == 0:
		return &ParseError{Field: "tag", Offset: off, Msg: "empty tag name"}
	case len(value) == 0:
		return &ParseError{Field: "tag", Offset: off, Msg: fmt.Sprintf("tag %q has an empty value", truncate(name, 64))}
	case bytes.ContainsAny(name, ";!^="):
		return &ParseError{Field: "tag", Offset: off, Msg: fmt.Sprintf("tag name %q holds one of ;!^=", truncate(name, 64))}
	case bytes.IndexByte(value, ';') >= 0:
		return &ParseError{Field: "tag", Offset: off, Msg: fmt.Sprintf("value of tag %q holds ';'", truncate(name, 64))}
	case value[0] == '~':
		return &ParseError{Field: "tag", Offset: off, Msg: fmt.Sprintf("value of tag %q starts with '~'", truncate(name, 64))}
	case bytes.HasPrefix(name, []byte("__")):
		return &ParseError{Field: "tag", Offset: off, Msg: fmt.Sprintf("tag name %q starts with \"__\" (reserved)", truncate(name, 64))}
	case len(name) > lim.MaxTagNameLen:
		return &ParseError{Field: "tag", Offset: off, Msg: fmt.Sprintf("tag name of %d bytes, over the limit of %d", len(name), lim.MaxTagNameLen)}
	case len(value) > lim.MaxTagValueLen:
		return &ParseError{Field: "tag", Offset: off, Msg: fmt.Sprintf("value of tag %q: %d bytes, over the limit of %d", truncate(name, 64), len(value), lim.MaxTagValueLen)}
	}
	return nil
}

// sanitizeName is carbon's sanitize_name_as_tag_value: the name without
// leading '~', which may not be empty.
func sanitizeName(name []byte, off int) ([]byte, error) {
	s := bytes.TrimLeft(name, "~")
	if len(s) == 0 {
		return nil, &ParseError{Field: "path", Offset: off, Msg: fmt.Sprintf("name %q is empty without its leading '~'", truncate(name, 64))}
	}
	return s, nil
}

// formatPath is carbon's TaggedSeries.format: the name, then the
// ";tag=value" strings sorted.
func formatPath(name []byte, tags []tag) string {
	slices.SortFunc(tags, compareTags)
	n := len(name)
	for _, t := range tags {
		n += 2 + len(t.name) + len(t.value)
	}
	var sb strings.Builder
	sb.Grow(n)
	sb.Write(name)
	for _, t := range tags {
		sb.WriteByte(';')
		sb.Write(t.name)
		sb.WriteByte('=')
		sb.Write(t.value)
	}
	return sb.String()
}

// normalizeOpenMetrics is carbon's parse_openmetrics: name{tag="value",...}
// where a value escapes '"' and '\' with '\', and tags are separated by ","
// (carbon's regular expression also takes ":,").
func normalizeOpenMetrics(path []byte, lim Limits) (string, error) {
	open := bytes.IndexByte(path, '{')
	if bytes.Count(path, []byte("{")) > 1 {
		return "", &ParseError{Field: "path", Offset: open, Msg: "more than one '{'"}
	}
	if open == 0 {
		return "", &ParseError{Field: "path", Msg: "no metric name before '{'"}
	}
	if i := bytes.IndexByte(path[:open], ';'); i >= 0 {
		return "", &ParseError{Field: "path", Offset: i, Msg: "';' in the name of the OpenMetrics form"}
	}
	name, err := sanitizeName(path[:open], 0)
	if err != nil {
		return "", err
	}
	raw := path[open+1 : len(path)-1] // tag="value",... without the final '}'
	base := open + 1
	var tags []tag
	for i := 0; i < len(raw); {
		eq := bytes.IndexByte(raw[i:], '=')
		if eq <= 0 || i+eq+1 >= len(raw) || raw[i+eq+1] != '"' {
			return "", &ParseError{Field: "tag", Offset: base + i, Msg: fmt.Sprintf("segment %q is not tag=\"value\"", truncate(raw[i:], 64))}
		}
		tname := raw[i : i+eq]
		j := i + eq + 2
		vstart := j
		for j < len(raw) && raw[j] != '"' {
			if raw[j] == '\\' {
				if j+1 < len(raw) && (raw[j+1] == '"' || raw[j+1] == '\\') {
					j += 2
					continue
				}
				return "", &ParseError{Field: "tag", Offset: base + j, Msg: "'\\' not followed by '\"' or '\\'"}
			}
			j++
		}
		if j >= len(raw) || j == vstart {
			return "", &ParseError{Field: "tag", Offset: base + i, Msg: fmt.Sprintf("segment %q is not tag=\"value\"", truncate(raw[i:], 64))}
		}
		value := bytes.ReplaceAll(bytes.ReplaceAll(raw[vstart:j], []byte(`\"`), []byte(`"`)), []byte(`\\`), []byte(`\`))
		if tags, err = addTag(tags, tname, value, base+i, lim); err != nil {
			return "", err
		}
		j++ // closing quote
		switch {
		case j == len(raw):
		case raw[j] == ',':
			j++
		case raw[j] == ':' && j+1 < len(raw) && raw[j+1] == ',':
			j += 2
		default:
			return "", &ParseError{Field: "tag", Offset: base + j, Msg: "want ',' after a tag's value"}
		}
		i = j
	}
	return formatPath(name, tags), nil
}

// Labels returns the labels of a normalized path: __name__ is the name and
// each tag a label. It is the inverse of NormalizePath's formatting; on a
// path NormalizePath did not return the result is unspecified but valid
// labels.Labels.
func Labels(path string) labels.Labels {
	semi := strings.IndexByte(path, ';')
	if semi < 0 {
		return labels.FromStrings(labels.MetricName, path)
	}
	b := labels.NewScratchBuilder(4)
	b.Add(labels.MetricName, path[:semi])
	for rest := path[semi+1:]; rest != ""; {
		seg := rest
		if i := strings.IndexByte(rest, ';'); i >= 0 {
			seg, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		if name, value, ok := strings.Cut(seg, "="); ok {
			b.Add(name, value)
		}
	}
	b.Sort()
	return b.Labels()
}

// Character classes of bytes for splitting fields: cSpace is what
// Python's str.split() splits on among ASCII, cHigh starts a multi-byte
// character (spaceAt decides).
const (
	cOther = iota
	cSpace
	cHigh
)

var charClass = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c >= utf8.RuneSelf:
			t[c] = cHigh
		case c == ' ' || c >= '\t' && c <= '\r' || c >= 0x1c && c <= 0x1f:
			t[c] = cSpace
		}
	}
	return t
}()

// spaceAt reports whether line[i:] starts with a character Python's
// str.split() splits on, and its length.
func spaceAt(line []byte, i int) (bool, int) {
	c := line[i]
	if c < utf8.RuneSelf {
		return c == ' ' || c >= '\t' && c <= '\r' || c >= 0x1c && c <= 0x1f, 1
	}
	r, size := utf8.DecodeRune(line[i:])
	return r != utf8.RuneError && unicode.IsSpace(r), size
}

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// parsePyFloat parses b as Python's float() does for ASCII input: an
// optional sign, then "inf", "infinity" or "nan" in any case, or a decimal
// number with an optional exponent where single '_' may separate digits.
// Go's hexadecimal floats and Python's out-of-grammar forms are refused;
// a number too large for float64 is ±Inf, as in Python.
func parsePyFloat(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 512 {
		return 0, false
	}
	i := 0
	if b[0] == '+' || b[0] == '-' {
		i++
	}
	if i < len(b) && (b[i]|0x20 == 'i' || b[i]|0x20 == 'n') {
		switch strings.ToLower(string(b[i:])) {
		case "inf", "infinity":
			if b[0] == '-' {
				return math.Inf(-1), true
			}
			return math.Inf(1), true
		case "nan":
			return math.NaN(), true
		}
		return 0, false
	}
	digits := func() (int, bool) { // digitpart: digit (["_"] digit)*
		n := 0
		for i < len(b) {
			switch c := b[i]; {
			case c >= '0' && c <= '9':
				n++
				i++
			case c == '_' && n > 0 && i+1 < len(b) && b[i+1] >= '0' && b[i+1] <= '9':
				i++
			default:
				return n, true
			}
		}
		return n, true
	}
	intDigits, _ := digits()
	fracDigits := 0
	if i < len(b) && b[i] == '.' {
		i++
		fracDigits, _ = digits()
	}
	if intDigits+fracDigits == 0 {
		return 0, false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if n, _ := digits(); n == 0 {
			return 0, false
		}
	}
	if i != len(b) {
		return 0, false
	}
	s := string(b)
	if strings.IndexByte(s, '_') >= 0 {
		s = strings.ReplaceAll(s, "_", "")
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return v, true
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
