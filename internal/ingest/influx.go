package ingest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/aerie-db/aerie/internal/vmformat"
)

// NewInfluxHandler serves InfluxDB line protocol writes: /write (v1:
// precision ns|n|u|us|ms|s|m|h, db ignored) and /api/v2/write (v2:
// precision ns|us|ms|s, org and bucket ignored), and /ping. It answers 204
// when every sample was stored, like InfluxDB.
func NewInfluxHandler(app storage.Appendable, opts Options) http.Handler {
	opts = opts.withDefaults()
	return &influxHandler{app: app, opts: opts, cache: newRefCache[*lineFields](opts.SeriesCache)}
}

type influxHandler struct {
	app   storage.Appendable
	opts  Options
	cache *refCache[*lineFields] // the series of every request's lines
}

// precision is a timestamp unit, as a multiplier or divisor to ms.
type precision struct {
	mul, div int64
}

var (
	precNS = precision{1, 1_000_000}
	precUS = precision{1, 1_000}
	precMS = precision{1, 1}
	precS  = precision{1_000, 1}
)

func parsePrecision(s string, v2 bool) (precision, error) {
	switch s {
	case "", "ns":
		return precNS, nil
	case "us":
		return precUS, nil
	case "ms":
		return precMS, nil
	case "s":
		return precS, nil
	}
	if !v2 {
		switch s {
		case "n":
			return precNS, nil
		case "u":
			return precUS, nil
		case "m":
			return precision{60_000, 1}, nil
		case "h":
			return precision{3_600_000, 1}, nil
		}
		return precision{}, fmt.Errorf("invalid precision %q: want ns, u, ms, s, m or h", s)
	}
	return precision{}, fmt.Errorf("invalid precision %q: want ns, us, ms or s", s)
}

// toMillis converts a timestamp in p's unit to ms, rounding down.
func (p precision) toMillis(x int64) (int64, bool) {
	if p.div > 1 {
		q := x / p.div
		if x%p.div < 0 {
			q--
		}
		return q, true
	}
	if p.mul > 1 {
		if x > math.MaxInt64/p.mul || x < math.MinInt64/p.mul {
			return 0, false
		}
		return x * p.mul, true
	}
	return x, true
}

// truncate rounds a ms time down to p's unit (InfluxDB truncates the
// receipt time to the write's precision).
func (p precision) truncate(ms int64) int64 {
	if p.mul > 1 {
		q := ms / p.mul
		if ms%p.mul < 0 {
			q--
		}
		return q * p.mul
	}
	return ms
}

func (h *influxHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	var v2 bool
	switch {
	case strings.HasSuffix(path, "/ping"):
		w.WriteHeader(http.StatusNoContent)
		return
	case strings.HasSuffix(path, "/api/v2/write"):
		v2 = true
	case strings.HasSuffix(path, "/write"):
	default:
		writeError(w, http.StatusNotFound, codeNotFound, fmt.Sprintf("no Influx endpoint at %s: use /write or /api/v2/write", path))
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, codeMethod, "writes must be POST")
		return
	}
	prec, err := parsePrecision(r.URL.Query().Get("precision"), v2)
	if err != nil {
		writeError(w, http.StatusBadRequest, codeInvalid, err.Error())
		return
	}
	body, closeBody, herr := openBody(r, h.opts.MaxBodyBytes)
	if herr != nil {
		writeError(w, herr.status, herr.code, herr.msg)
		return
	}
	defer closeBody()

	rep := newReport(h.opts.MaxReported)
	b := newBatch(r.Context(), h.app, h.opts.BatchSamples, rep)
	defer b.release()
	p := &influxParser{prec: prec, now: prec.truncate(h.opts.Now().UnixMilli()), b: b, rep: rep, intern: newInterner(), cache: h.cache}
	readErr, commitErr := p.run(body)
	if readErr == nil && commitErr == nil {
		commitErr = b.commit()
	}
	if err := b.sync(); commitErr == nil {
		commitErr = err // what was committed before a read error
	}
	respond(w, &h.opts, ProtocolInflux, rep, readErr, commitErr)
}

// influxParser turns lines into samples. Each line gets a fresh decoder
// over its bytes, so that line numbers and offsets are exact for every
// error, not only the decoder's syntax errors.
type influxParser struct {
	prec precision
	now  int64 // ms, for lines without a timestamp
	b    *batch
	rep  *report

	intern *interner
	long   []byte // a line longer than the read buffer
	name   []byte // scratch: sanitized names
	tags   []labels.Label
	fields []influxField
	sb     labels.ScratchBuilder

	// The fast path (known series, see refCache); off without a cache.
	cache   *refCache[*lineFields]
	curLine []byte      // the current line
	series  []byte      // the current line's measurement and tags as written
	skey    refKey      // their digest
	known   *lineFields // the cache's fields of skey, nil if none
	fast    []fastField // the current line's fields
	added   []lineField // the full path's new series for the cache
}

// influxField is one decoded field of a line.
type influxField struct {
	name   string // series name: measurement_field, sanitized
	raw    []byte // the field name as written, unescaped (in the line's buffer)
	v      float64
	reason string // non-empty: rejected
	detail string
}

// fastField is a field of a known series.
type fastField struct {
	refVal
	v float64
}

// run reads and ingests every line. It returns the first read error
// (the limit, a broken gzip stream) or Commit error; either stops it, with
// the uncommitted samples rolled back and counted.
func (p *influxParser) run(body io.Reader) (readErr, commitErr error) {
	br := bufio.NewReaderSize(body, 64<<10)
	var off int64
	for lineNo := int64(1); ; lineNo++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			p.long = append(p.long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				p.long = append(p.long, line...)
			}
			line = p.long
		}
		if err != nil && err != io.EOF {
			// A truncated line might parse as a wrong value: drop it.
			reason := ReasonBodyRead
			if isTooLarge(err) {
				reason = ReasonBodyTooLarge
			}
			p.b.rollback(reason)
			return err, nil
		}
		if len(line) > 0 {
			p.line(lineNo, off, line)
			off += int64(len(line))
			if cerr := p.b.lineDone(); cerr != nil {
				return nil, cerr
			}
		}
		if err == io.EOF {
			return nil, nil
		}
	}
}

// line ingests one line (with its '\n', if any) that starts at byte off.
func (p *influxParser) line(lineNo, off int64, line []byte) {
	line = vmformat.TrimEOL(line)
	p.curLine = line
	if p.cache != nil {
		var rest []byte
		p.series, rest = seriesPart(line)
		p.skey = p.cache.seriesKey(p.series)
		p.known = p.cache.get(p.skey)
		if p.known != nil && p.fastLine(lineNo, rest) {
			return
		}
	}
	dec := lineprotocol.NewDecoderWithBytes(line)
	if !dec.Next() {
		return // blank or comment
	}
	if err := p.decode(dec); err != nil {
		p.lineError(lineNo, off, line, err)
		return
	}
	t, err := p.timestamp(dec)
	if err != nil {
		p.lineError(lineNo, off, line, err)
		return
	}
	if dec.Next() {
		// The decoder was given a single line; more means a stray '\r'.
		p.lineError(lineNo, off, line, errors.New("carriage return inside the line"))
		return
	}
	p.added = p.added[:0]
	for i := range p.fields {
		f := &p.fields[i]
		if f.reason == ReasonStringField {
			p.rep.skip(f.reason, 1)
			continue
		}
		if f.reason != "" {
			p.rep.reject(f.reason, 1, lineNo, func() string { return fmt.Sprintf("%s: %s", where(lineNo, 0, 0), f.detail) })
			continue
		}
		p.sb.Reset()
		p.sb.Add(labels.MetricName, f.name)
		for _, l := range p.tags {
			p.sb.Add(l.Name, l.Value)
		}
		p.sb.Sort()
		l := p.sb.Labels()
		lh := l.Hash()
		ref := p.b.addRef(0, l, lh, t, f.v, lineNo, nil, 0)
		if ref != 0 && p.cache != nil && len(p.series) > 0 && p.known.find(f.raw, i).ref == 0 {
			p.added = append(p.added, lineField{p.intern.get(f.raw), refVal{ref, lh}}) // one string per field name per request, not per series
		}
	}
	if len(p.added) > 0 {
		p.cache.put(p.skey, p.known.with(p.added))
	}
}

// fastLine ingests a line of a known measurement and tags (p.known; rest
// is what follows them in the line)
// whose fields are all of known series and plainly written numbers or
// booleans, by ref; it returns false, having ingested nothing, for any
// other line, which the full path then parses again. It reads the fields
// and the timestamp itself, not through the line-protocol decoder, and
// only what that decoder reads the same way: a field name with an escape,
// a string, a value strconv does not parse exactly as the decoder does, or
// spacing other than one space before the fields and the timestamp goes to
// the full path (FuzzInfluxFastPath holds the two paths to the same
// samples). The measurement and tags are not parsed again: the same bytes
// were accepted by the full path when they entered the cache.
func (p *influxParser) fastLine(lineNo int64, rest []byte) bool {
	if len(p.series) == 0 || len(rest) < 2 || rest[0] != ' ' {
		return false
	}
	rest = rest[1:]
	p.fast = p.fast[:0]
	for i := 0; ; i++ {
		eq := fieldNameEnd(rest)
		if eq <= 0 || eq == len(rest) || rest[eq] != '=' {
			return false
		}
		f := fastField{refVal: p.known.find(rest[:eq], i)}
		if f.ref == 0 {
			return false
		}
		rest = rest[eq+1:]
		end := 0
		for end < len(rest) && rest[end] != ',' && rest[end] != ' ' {
			end++
		}
		v, ok := fastValue(rest[:end])
		if !ok {
			return false
		}
		f.v = v
		p.fast = append(p.fast, f)
		rest = rest[end:]
		if len(rest) == 0 || rest[0] == ' ' {
			break
		}
		rest = rest[1:] // ','
	}
	t := p.now
	if len(rest) > 0 {
		x, ok := parseInt(rest[1:]) // digits and an optional '-' only
		if !ok {
			return false
		}
		if t, ok = p.prec.toMillis(x); !ok {
			return false
		}
	}
	for i, f := range p.fast {
		p.b.addRef(f.ref, labels.EmptyLabels(), f.lhash, t, f.v, lineNo, p, i)
	}
	return true
}

// fieldNameEnd returns the length of the field name that starts b, up to
// its '=', or -1 if it has a byte the fast path leaves to the decoder (an
// escape, a separator, a control character).
func fieldNameEnd(b []byte) int {
	for i, c := range b {
		switch {
		case c == '=':
			return i
		case c == '\\' || c == ',' || c == ' ' || c < 0x20 || c == 0x7f:
			return -1
		}
	}
	return len(b)
}

// fastValue reads a field value as the line-protocol decoder does, for the
// kinds the fast path takes: floats, integers ('i'), unsigned ('u') and
// booleans. It returns false for anything else and for a value the full
// path rejects (not a finite float, an integer not exact as a float64).
func fastValue(b []byte) (float64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	switch b[0] {
	case 't', 'T':
		switch string(b) {
		case "t", "T", "true", "True", "TRUE":
			return 1, true
		}
		return 0, false
	case 'f', 'F':
		switch string(b) {
		case "f", "F", "false", "False", "FALSE":
			return 0, true
		}
		return 0, false
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '.':
	default:
		return 0, false
	}
	switch b[len(b)-1] {
	case 'i':
		i, err := strconv.ParseInt(string(b[:len(b)-1]), 10, 64)
		if err != nil {
			return 0, false
		}
		return exactInt(i)
	case 'u':
		u, err := strconv.ParseUint(string(b[:len(b)-1]), 10, 64)
		if err != nil {
			return 0, false
		}
		return exactUint(u)
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// describe returns the labels of the i-th field of the current line's
// fast path, parsing the line again (for messages only).
func (p *influxParser) describe(i int) string {
	dec := lineprotocol.NewDecoderWithBytes(p.curLine)
	if !dec.Next() || p.decode(dec) != nil || i >= len(p.fields) {
		return fmt.Sprintf("%q", p.series)
	}
	p.sb.Reset()
	p.sb.Add(labels.MetricName, p.fields[i].name)
	for _, l := range p.tags {
		p.sb.Add(l.Name, l.Value)
	}
	p.sb.Sort()
	return p.sb.Labels().String()
}

// seriesPart splits a line, after the leading spaces the decoder skips
// (a tab is not skipped: it stays in the series part, which then never
// enters the cache, as the decoder refuses the line), into its
// measurement and tags as written, up to its first space that is not
// escaped, and the rest of the line.
func seriesPart(line []byte) (series, rest []byte) {
	line = bytes.TrimLeft(line, " ")
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case ' ':
			return line[:i], line[i:]
		}
	}
	return line, nil
}

// lineError rejects a whole line (as one sample: its fields are not
// known), naming the column and byte offset of syntax errors.
func (p *influxParser) lineError(lineNo, off int64, line []byte, err error) {
	p.rep.reject(ReasonParse, 1, lineNo, func() string {
		var de *lineprotocol.DecodeError
		if errors.As(err, &de) {
			at := where(lineNo, de.Column, off+int64(de.Column)-1)
			if tok := snippet(line, de.Column-1); tok != "" && !strings.Contains(de.Err.Error(), tok) {
				return fmt.Sprintf("%s: %v (at %q)", at, de.Err, tok)
			}
			return fmt.Sprintf("%s: %v", at, de.Err)
		}
		return fmt.Sprintf("%s: %v", where(lineNo, 0, 0), err)
	})
}

// decode reads the measurement, tags and fields of the current line.
func (p *influxParser) decode(dec *lineprotocol.Decoder) error {
	meas, err := dec.Measurement()
	if err != nil {
		return err
	}
	p.name = appendMetricName(p.name[:0], meas, true)
	p.name = append(p.name, '_')
	prefix := len(p.name)

	p.tags = p.tags[:0]
	for {
		k, v, err := dec.NextTag()
		if err != nil {
			return err
		}
		if k == nil {
			break
		}
		p.name = appendLabelName(p.name[:prefix], k)
		p.tags = append(p.tags, labels.Label{Name: p.intern.get(p.name[prefix:]), Value: p.intern.get(v)})
	}
	slices.SortFunc(p.tags, func(a, b labels.Label) int { return strings.Compare(a.Name, b.Name) })
	for i, l := range p.tags {
		if l.Name == labels.MetricName {
			return fmt.Errorf("tag %q is reserved for the series name", l.Name)
		}
		if i > 0 && p.tags[i-1].Name == l.Name {
			return fmt.Errorf("two tags map to the label name %q", l.Name)
		}
	}

	p.fields = p.fields[:0]
	for {
		k, v, err := dec.NextField()
		if err != nil {
			return err
		}
		if k == nil {
			break
		}
		p.name = appendMetricName(p.name[:prefix], k, false)
		f := influxField{name: p.intern.get(p.name), raw: k}
		var ok bool
		switch v.Kind() {
		case lineprotocol.Float:
			f.v = v.FloatV()
		case lineprotocol.Int:
			if f.v, ok = exactInt(v.IntV()); !ok {
				f.reason = ReasonInexact
				f.detail = fmt.Sprintf("field %q of %q: integer %d is not exactly representable as float64", k, meas, v.IntV())
			}
		case lineprotocol.Uint:
			if f.v, ok = exactUint(v.UintV()); !ok {
				f.reason = ReasonInexact
				f.detail = fmt.Sprintf("field %q of %q: unsigned %du is not exactly representable as float64", k, meas, v.UintV())
			}
		case lineprotocol.Bool:
			if v.BoolV() {
				f.v = 1
			}
		case lineprotocol.String:
			f.reason = ReasonStringField
			f.detail = fmt.Sprintf("field %q of %q: string fields are not supported (field skipped)", k, meas)
		default:
			f.reason = ReasonParse
			f.detail = fmt.Sprintf("field %q of %q: unsupported value type %v", k, meas, v.Kind())
		}
		p.fields = append(p.fields, f)
	}
	return nil
}

// timestamp reads the line's timestamp in ms; a line without one gets the
// receipt time.
func (p *influxParser) timestamp(dec *lineprotocol.Decoder) (int64, error) {
	tb, err := dec.TimeBytes()
	if err != nil {
		return 0, err
	}
	if tb == nil {
		return p.now, nil
	}
	x, ok := parseInt(tb)
	if !ok {
		return 0, fmt.Errorf("invalid timestamp %q: not a 64-bit integer", tb)
	}
	t, ok := p.prec.toMillis(x)
	if !ok {
		return 0, fmt.Errorf("timestamp %d out of range for its precision", x)
	}
	return t, nil
}

// exactInt converts i to float64 if that loses nothing.
func exactInt(i int64) (float64, bool) {
	f := float64(i)
	if f >= 0x1p63 {
		return 0, false
	}
	return f, int64(f) == i
}

// exactUint converts u to float64 if that loses nothing.
func exactUint(u uint64) (float64, bool) {
	f := float64(u)
	if f >= 0x1p64 {
		return 0, false
	}
	return f, uint64(f) == u
}

// parseInt parses a decimal int64 with an optional '-'.
func parseInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if u > (math.MaxUint64-9)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	switch {
	case neg && u <= 1<<63:
		return int64(-u), true // wraps to MinInt64 for 1<<63
	case !neg && u <= math.MaxInt64:
		return int64(u), true
	}
	return 0, false
}

// snippet is the token of line at i, for error messages.
func snippet(line []byte, i int) string {
	if i < 0 || i >= len(line) {
		return ""
	}
	s := line[i:]
	if j := bytes.IndexAny(s, " ,"); j >= 0 {
		s = s[:j]
	}
	if len(s) > 32 {
		s = s[:32]
	}
	return string(s)
}

// interner keeps the strings of a request's names and tag values, which
// repeat from line to line, to save allocations.
type interner struct{ m map[string]string }

const maxInterned = 4096

func newInterner() *interner { return &interner{m: map[string]string{}} }

func (in *interner) get(b []byte) string {
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(in.m) < maxInterned {
		in.m[s] = s
	}
	return s
}
