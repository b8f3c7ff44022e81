package statsd

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/aerie-db/aerie/internal/positive"
)

// Type is a statsd metric type.
type Type uint8

// Metric types. Timer covers statsd's "ms" and DogStatsD's "h" (a histogram
// is aggregated exactly as a timer).
const (
	Counter Type = 1 // "c"
	Gauge   Type = 2 // "g"
	Timer   Type = 3 // "ms", "h"
	Set     Type = 4 // "s"
)

func (t Type) String() string {
	switch t {
	case Counter:
		return "counter"
	case Gauge:
		return "gauge"
	case Timer:
		return "timer"
	case Set:
		return "set"
	}
	return "Type(" + strconv.Itoa(int(t)) + ")"
}

// Tag is one DogStatsD tag (|#name:value).
type Tag struct {
	Name, Value []byte
}

// Metric is one parsed value. Its byte slices point into the parser's
// scratch space or the input and are valid only during the callback.
type Metric struct {
	Name  []byte // sanitized unless Parser.KeepNames
	Type  Type
	Value float64 // as sent: counter increment (before the sample rate), gauge value or delta, timer value; 0 for sets
	Delta bool    // gauge only: the value had a leading sign and changes the gauge
	// Member is a set's value, as sent.
	Member []byte
	// Rate is the sample rate, in (0, 1]; 1 when the metric had none.
	Rate float64
	// Tags are sorted by name, names unique.
	Tags []Tag
}

// Limits bound what one packet may hold. Zero fields take the defaults in
// brackets.
type Limits struct {
	MaxNameLen          int // [1024] bytes of a metric name as sent
	MaxMetricsPerPacket int // [10000] values of one datagram or TCP line
	MaxTags             int // [64] tags of one line
}

// Default limits.
const (
	DefaultMaxNameLen          = 1024
	DefaultMaxMetricsPerPacket = 10_000
	DefaultMaxTags             = 64
)

func (l Limits) withDefaults() Limits {
	l.MaxNameLen = positive.Or(l.MaxNameLen, DefaultMaxNameLen)
	l.MaxMetricsPerPacket = positive.Or(l.MaxMetricsPerPacket, DefaultMaxMetricsPerPacket)
	l.MaxTags = positive.Or(l.MaxTags, DefaultMaxTags)
	return l
}

// ParseError says what was wrong with a line and where.
type ParseError struct {
	Line   int    // 1-based line of the packet
	Offset int    // byte offset in the packet (or TCP line) of the fault
	Metric string // the metric name as sent, cut to 64 bytes ("" if none)
	Msg    string
}

func (e *ParseError) Error() string {
	if e.Metric == "" {
		return fmt.Sprintf("statsd line %d, byte %d: %s", e.Line, e.Offset, e.Msg)
	}
	return fmt.Sprintf("statsd line %d, byte %d, metric %q: %s", e.Line, e.Offset, e.Metric, e.Msg)
}

// Parser parses statsd lines:
//
//	name:value|type[|@rate][:value|type[|@rate]]...[|#tag:value,...]
//
// A line is all or nothing: fn sees its values only when every one parsed.
// A Parser is not safe for concurrent use; it reuses its scratch space.
type Parser struct {
	Limits Limits
	// KeepNames keeps metric names as sent (they must be valid UTF-8);
	// otherwise they are sanitized as statsd's keyNameSanitize does.
	KeepNames bool

	name []byte
	vals []Metric
	tags []Tag
}

// NewParser returns a parser with the limits l (zero fields: defaults).
func NewParser(l Limits, keepNames bool) *Parser {
	return &Parser{Limits: l.withDefaults(), KeepNames: keepNames}
}

// ParsePacket calls fn for every value of every line of pkt ("\n"
// separated; a "\r" before "\n" is ignored; empty lines are skipped) and
// bad for every malformed line, and returns the number of values passed
// to fn. Past Limits.MaxMetricsPerPacket values the rest of the packet is
// refused with one error; ParsePacket returns then the number of lines
// refused in *skipped.
func (p *Parser) ParsePacket(pkt []byte, fn func(*Metric), bad func(*ParseError)) (n, skipped int) {
	budget := p.Limits.withDefaults().MaxMetricsPerPacket
	lineNo := 0
	for off := 0; off < len(pkt); {
		end := bytes.IndexByte(pkt[off:], '\n')
		next := len(pkt)
		if end < 0 {
			end = len(pkt)
		} else {
			end += off
			next = end + 1
		}
		lineNo++
		line := pkt[off:end]
		if k := len(line); k > 0 && line[k-1] == '\r' {
			line = line[:k-1]
		}
		if len(line) > 0 {
			k, err := p.parseLine(line, off, lineNo, budget-n)
			if err != nil {
				if err.budget {
					bad(&err.ParseError)
					return n, 1 + countLines(pkt[next:])
				}
				bad(&err.ParseError)
			} else {
				for i := range k {
					fn(&p.vals[i])
				}
				n += k
			}
		}
		off = next
	}
	return n, 0
}

// ParseLine parses one line (a "\r" at its end is ignored) and calls fn
// for each of its values; error offsets are in line.
func (p *Parser) ParseLine(line []byte, fn func(*Metric)) error {
	k, err := p.parseLine(line, 0, 1, p.Limits.withDefaults().MaxMetricsPerPacket)
	if err != nil {
		return &err.ParseError
	}
	for i := range k {
		fn(&p.vals[i])
	}
	return nil
}

type lineError struct {
	ParseError
	budget bool // the packet's metric budget ran out
}

// parseLine parses line, which starts at byte base of its packet, into
// p.vals[:n] (at most budget values).
func (p *Parser) parseLine(line []byte, base, lineNo, budget int) (int, *lineError) {
	lim := p.Limits.withDefaults()
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	var rawName []byte
	fail := func(at int, format string, args ...any) (int, *lineError) {
		return 0, &lineError{ParseError: ParseError{Line: lineNo, Offset: base + at, Metric: cut(rawName), Msg: fmt.Sprintf(format, args...)}}
	}
	colon := bytes.IndexByte(line, ':')
	if colon < 0 {
		rawName = line
		return fail(len(line), "no ':' after the metric name")
	}
	rawName = line[:colon]
	if colon == 0 {
		return fail(0, "empty metric name")
	}
	if colon > lim.MaxNameLen {
		return fail(0, "metric name of %d bytes, more than %d", colon, lim.MaxNameLen)
	}
	if p.KeepNames {
		if !utf8.Valid(rawName) {
			return fail(0, "metric name is not valid UTF-8")
		}
		p.name = append(p.name[:0], rawName...)
	} else {
		p.name = sanitize(p.name[:0], rawName)
		if len(p.name) == 0 {
			return fail(0, "metric name %q is empty once sanitized", rawName)
		}
	}

	rest, restOff := line[colon+1:], colon+1
	p.tags = p.tags[:0]
	if i := bytes.Index(rest, []byte("|#")); i >= 0 {
		if at, msg := p.parseTags(rest[i+2:], lim.MaxTags); msg != "" {
			return fail(restOff+i+2+at, "%s", msg)
		}
		rest = rest[:i]
	}

	p.vals = p.vals[:0]
	for off := 0; ; {
		end := bytes.IndexByte(rest[off:], ':')
		last := end < 0
		if last {
			end = len(rest)
		} else {
			end += off
		}
		if len(p.vals) == budget {
			_, e := fail(restOff+off, "more than %d metrics in one packet: the rest of the packet is refused", lim.MaxMetricsPerPacket)
			e.budget = true
			return 0, e
		}
		m, at, msg := parseValue(rest[off:end])
		if msg != "" {
			return fail(restOff+off+at, "%s", msg)
		}
		m.Name, m.Tags = p.name, p.tags
		p.vals = append(p.vals, m)
		if last {
			break
		}
		off = end + 1
	}
	return len(p.vals), nil
}

// parseValue parses value|type[|@rate]; on error it returns the offset in
// b and a message.
func parseValue(b []byte) (m Metric, at int, msg string) {
	bar := bytes.IndexByte(b, '|')
	if bar < 0 {
		return m, len(b), fmt.Sprintf("no '|type' after the value %q", cut(b))
	}
	val := b[:bar]
	typ := b[bar+1:]
	rate := []byte(nil)
	rateAt := 0
	if i := bytes.IndexByte(typ, '|'); i >= 0 {
		rate, rateAt = typ[i+1:], bar+1+i+1
		typ = typ[:i]
		if j := bytes.IndexByte(rate, '|'); j >= 0 {
			return m, rateAt + j, fmt.Sprintf("unexpected field %q after the sample rate", cut(rate[j+1:]))
		}
	}
	switch string(typ) {
	case "c":
		m.Type = Counter
	case "g":
		m.Type = Gauge
	case "ms", "h":
		m.Type = Timer
	case "s":
		m.Type = Set
	default:
		return m, bar + 1, fmt.Sprintf("unknown metric type %q (want c, g, ms, h or s)", cut(typ))
	}
	m.Rate = 1
	if rate != nil {
		if len(rate) < 2 || rate[0] != '@' {
			return m, rateAt, fmt.Sprintf("field %q is not a sample rate @r", cut(rate))
		}
		r, ok := parseNumber(rate[1:])
		if !ok || r <= 0 || r > 1 {
			return m, rateAt, fmt.Sprintf("sample rate %q is not a number in (0, 1]", cut(rate))
		}
		m.Rate = r
	}
	if m.Type == Set {
		if len(val) == 0 {
			return m, 0, "empty set member"
		}
		m.Member = val
		return m, 0, ""
	}
	v, ok := parseNumber(val)
	if !ok {
		return m, 0, fmt.Sprintf("value %q is not a finite decimal number", cut(val))
	}
	m.Value = v
	m.Delta = m.Type == Gauge && (val[0] == '+' || val[0] == '-')
	return m, 0, ""
}

// parseTags parses name:value,... into p.tags, sorted by name; on error
// it returns the offset in b and a message.
func (p *Parser) parseTags(b []byte, max int) (int, string) {
	if len(b) == 0 {
		return 0, "empty tag list after '|#'"
	}
	for off := 0; ; {
		end := bytes.IndexByte(b[off:], ',')
		last := end < 0
		if last {
			end = len(b)
		} else {
			end += off
		}
		t := b[off:end]
		colon := bytes.IndexByte(t, ':')
		switch {
		case len(p.tags) == max:
			return off, fmt.Sprintf("more than %d tags", max)
		case colon <= 0:
			if len(t) == 0 {
				return off, "empty tag"
			}
			return off, fmt.Sprintf("tag %q has no name:value form", cut(t))
		case colon == len(t)-1:
			return off, fmt.Sprintf("tag %q has an empty value", cut(t))
		case len(t) > 1 && t[0] == '_' && t[1] == '_':
			return off, fmt.Sprintf("tag name %q is reserved (starts with __)", cut(t[:colon]))
		case !utf8.Valid(t):
			return off, fmt.Sprintf("tag %q is not valid UTF-8", cut(t))
		}
		tag := Tag{Name: t[:colon], Value: t[colon+1:]}
		// Insertion sort: tags are few.
		i := len(p.tags)
		p.tags = append(p.tags, tag)
		for ; i > 0 && bytes.Compare(p.tags[i-1].Name, tag.Name) >= 0; i-- {
			if bytes.Equal(p.tags[i-1].Name, tag.Name) {
				return off, fmt.Sprintf("duplicate tag %q", cut(tag.Name))
			}
			p.tags[i] = p.tags[i-1]
		}
		p.tags[i] = tag
		if last {
			return 0, ""
		}
		off = end + 1
	}
}

// parseNumber parses a finite decimal number: [+-]digits[.digits][e[+-]digits]
// (either digit run before or after the point may be empty, not both).
// statsd's JavaScript Number() also takes hexadecimal, "Infinity" and
// surrounding blanks; those are refused here.
func parseNumber(b []byte) (float64, bool) {
	i := 0
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		i++
	}
	digits := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i, digits = i+1, digits+1
	}
	if i < len(b) && b[i] == '.' {
		i++
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		e := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i, e = i+1, e+1
		}
		if e == 0 {
			return 0, false
		}
	}
	if i != len(b) {
		return 0, false
	}
	// The string does not outlive the call (the error, which would hold
	// it, is dropped).
	v, err := strconv.ParseFloat(unsafe.String(&b[0], len(b)), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

// sanitize appends name to dst as statsd's sanitizeKeyName does: runs of
// blanks become "_", "/" becomes "-", and bytes other than letters,
// digits, "_", "-" and "." are dropped.
func sanitize(dst, name []byte) []byte {
	blank := false
	for _, c := range name {
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r':
			if !blank {
				dst = append(dst, '_')
			}
			blank = true
			continue
		case c == '/':
			dst = append(dst, '-')
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.':
			dst = append(dst, c)
		}
		blank = false
	}
	return dst
}

// cut returns b as a string of at most 64 bytes, for error messages.
func cut(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "…"
	}
	return string(b)
}

// countLines counts the non-empty lines of b.
func countLines(b []byte) int {
	n := 0
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return n + 1
		}
		if i > 0 && !(i == 1 && b[0] == '\r') {
			n++
		}
		b = b[i+1:]
	}
	return n
}
