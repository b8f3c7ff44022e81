package vmformat

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
)

// MaxCSVColumns bounds the column positions of a spec, as in
// VictoriaMetrics.
const MaxCSVColumns = 64 << 10

type csvColKind uint8

const (
	colIgnored csvColKind = iota
	colTime
	colMetric
	colLabel
)

type csvCol struct {
	kind csvColKind
	name string // metric or label name
}

// CSVFormat is an import column spec (doc.go), from ParseCSVFormat.
type CSVFormat struct {
	cols    []csvCol // by 0-based position
	timeCol int      // -1: none
	time    timeFormat
	nameCol int // label:__name__, -1: none
	metrics int
	labels  int
}

// ParseCSVFormat reads a spec such as "1:time:unix_ms,2:metric:cpu,3:label:host".
func ParseCSVFormat(spec string) (*CSVFormat, error) {
	f := &CSVFormat{timeCol: -1, nameCol: -1}
	labelCols := map[string]int{}
	for i, entry := range strings.Split(spec, ",") {
		parts := strings.SplitN(entry, ":", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("csv format entry %d %q: want <column>:<type>:<name or time format>", i+1, entry)
		}
		pos, err := strconv.Atoi(parts[0])
		if err != nil || pos < 1 || pos > MaxCSVColumns {
			return nil, fmt.Errorf("csv format entry %d %q: column must be a number from 1 to %d", i+1, entry, MaxCSVColumns)
		}
		c := csvCol{name: parts[2]}
		switch parts[1] {
		case "time":
			if f.timeCol >= 0 {
				return nil, fmt.Errorf("csv format entry %d %q: a second time column", i+1, entry)
			}
			if f.time, err = parseTimeFormat(parts[2]); err != nil {
				return nil, fmt.Errorf("csv format entry %d %q: %w", i+1, entry, err)
			}
			c.kind, c.name = colTime, ""
			f.timeCol = pos - 1
		case "metric":
			if c.name == "" {
				return nil, fmt.Errorf("csv format entry %d %q: empty metric name", i+1, entry)
			}
			c.kind = colMetric
			f.metrics++
		case "label":
			if c.name == "" {
				return nil, fmt.Errorf("csv format entry %d %q: empty label name", i+1, entry)
			}
			if prev, ok := labelCols[c.name]; ok {
				return nil, fmt.Errorf("csv format entry %d %q: label %q is already column %d", i+1, entry, c.name, prev)
			}
			labelCols[c.name] = pos
			c.kind = colLabel
			if c.name == labels.MetricName {
				f.nameCol = pos - 1
			} else {
				f.labels++
			}
		default:
			return nil, fmt.Errorf("csv format entry %d %q: unknown type %q: want time, metric or label", i+1, entry, parts[1])
		}
		for len(f.cols) < pos {
			f.cols = append(f.cols, csvCol{})
		}
		if f.cols[pos-1].kind != colIgnored {
			return nil, fmt.Errorf("csv format entry %d %q: column %d appears twice", i+1, entry, pos)
		}
		f.cols[pos-1] = c
	}
	switch {
	case f.metrics == 0:
		return nil, fmt.Errorf("csv format %q has no metric column", spec)
	case f.nameCol >= 0 && f.metrics > 1:
		return nil, fmt.Errorf("csv format %q: with a label:%s column, exactly one metric column", spec, labels.MetricName)
	}
	return f, nil
}

// String returns the spec in canonical form (columns in order).
func (f *CSVFormat) String() string {
	var b strings.Builder
	for i, c := range f.cols {
		if c.kind == colIgnored {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i + 1))
		switch c.kind {
		case colTime:
			b.WriteString(":time:" + f.time.name)
		case colMetric:
			b.WriteString(":metric:" + c.name)
		case colLabel:
			b.WriteString(":label:" + c.name)
		}
	}
	return b.String()
}

// HasTime reports whether the spec has a time column; rows of a spec
// without one get the decoder's default time.
func (f *CSVFormat) HasTime() bool { return f.timeCol >= 0 }

// Sample is one sample of a CSV row.
type Sample struct {
	Labels labels.Labels
	T      int64
	V      float64
}

// CSVDecoder reads CSV records by a CSVFormat. Next advances to the next
// non-blank record; Samples holds its samples (one per non-empty metric
// field) if LineErr is nil. A bad record does not stop the decoder.
type CSVDecoder struct {
	lr  *LineReader
	f   *CSVFormat
	lim Limits
	now int64

	samples []Sample
	lineErr *ParseError
	err     error // sticky: a spec the limits refuse

	rec    []byte     // unquoted field bytes of the record
	fields []csvField // spans of rec
	start  int64      // line where the record starts
	sb     labels.ScratchBuilder
	base   []labels.Label
	strs   interner
}

// csvField is one field: rec[start:end], found at line, col (1-based) and
// byte offset off.
type csvField struct {
	start, end int
	line       int64
	col        int
	off        int64
}

// NewCSVDecoder returns a decoder of r. Rows get the time now (ms) if f
// has no time column.
func NewCSVDecoder(r io.Reader, f *CSVFormat, lim Limits, now int64) *CSVDecoder {
	lim = lim.WithDefaults()
	d := &CSVDecoder{lr: NewLineReader(r, lim.MaxLineBytes), f: f, lim: lim, now: now}
	switch {
	case f.labels+1 > lim.MaxLabels:
		d.err = fmt.Errorf("csv format has %d label columns, more than the limit of %d labels per series", f.labels, lim.MaxLabels-1)
	default:
		for _, c := range f.cols {
			n := lim.MaxLabelNameBytes
			if c.kind == colMetric {
				n = lim.MaxLabelValueBytes
			}
			if (c.kind == colLabel || c.kind == colMetric) && len(c.name) > n {
				d.err = fmt.Errorf("csv format: name %.32q… is longer than the limit of %d bytes", c.name, n)
			}
		}
	}
	return d
}

// Next reads the next non-blank record. It returns false at the end of
// the input, on a read error, or if the format exceeds the limits (see
// Err).
func (d *CSVDecoder) Next() bool {
	if d.err != nil {
		return false
	}
	for {
		d.lineErr = nil
		d.samples = d.samples[:0]
		ok, empty := d.record()
		if !ok {
			return false
		}
		if empty {
			continue
		}
		if d.lineErr == nil {
			d.row()
		}
		return true
	}
}

// Samples returns the samples of the current record, valid until the next
// call of Next, if LineErr is nil.
func (d *CSVDecoder) Samples() []Sample { return d.samples }

// LineErr returns the problem of the current record (a *ParseError), or
// nil.
func (d *CSVDecoder) LineErr() error {
	if d.lineErr == nil {
		return nil
	}
	return d.lineErr
}

// Line returns the line where the current record starts, 1-based.
func (d *CSVDecoder) Line() int64 { return d.start }

// Err returns what ended the input: a read error (*ReadError), a format
// the limits refuse, or nil at the end. It is valid once Next returned
// false.
func (d *CSVDecoder) Err() error {
	if d.err != nil {
		return d.err
	}
	return d.lr.Err()
}

func (d *CSVDecoder) fail(line int64, col int, off int64, field, msg string) {
	if d.lineErr == nil {
		d.lineErr = &ParseError{Line: line, Column: col, Offset: off, Field: field, Msg: msg}
	}
}

// record splits the next record into fields. A quoted field may go on
// over the next lines. empty: the record is a blank line.
func (d *CSVDecoder) record() (ok, empty bool) {
	line, ok := d.lr.Read()
	if !ok {
		return false, false
	}
	d.start = d.lr.line
	d.rec, d.fields = d.rec[:0], d.fields[:0]
	if d.lr.tooLong {
		d.fail(d.lr.line, 0, d.lr.off, "", fmt.Sprintf("line longer than the limit of %d bytes", d.lim.MaxLineBytes))
		return true, false
	}
	if len(TrimEOL(line)) == 0 {
		return true, true
	}
	over := false // the record is over the limit: scan on, keep nothing
	i := 0
	for {
		fld := csvField{start: len(d.rec), line: d.lr.line, col: i + 1, off: d.lr.off + int64(i)}
		if i < len(line) && line[i] == '"' {
			i++
			for {
				j := bytes.IndexByte(line[i:], '"')
				if j < 0 {
					// The field goes on over the next line.
					if !over {
						d.rec = append(d.rec, line[i:]...)
					}
					if len(d.rec) > d.lim.MaxLineBytes {
						over = true
						d.rec = d.rec[:0]
					}
					if line, ok = d.lr.Read(); !ok || d.lr.tooLong {
						d.fail(fld.line, fld.col, fld.off, fieldName(d.f, len(d.fields)), "quoted field without its closing quote")
						return true, false
					}
					i = 0
					continue
				}
				if !over {
					d.rec = append(d.rec, line[i:i+j]...)
				}
				i += j + 1
				if i < len(line) && line[i] == '"' {
					if !over {
						d.rec = append(d.rec, '"')
					}
					i++
					continue
				}
				break
			}
			fld.end = len(d.rec)
			d.fields = append(d.fields, fld)
			rest := line[i:]
			switch {
			case len(TrimEOL(rest)) == 0:
			case rest[0] == ',':
				i++
				continue
			default:
				d.fail(d.lr.line, i+1, d.lr.off+int64(i), fieldName(d.f, len(d.fields)-1), fmt.Sprintf("unexpected %q after the closing quote", rest[0]))
			}
			break
		}
		j := bytes.IndexByte(line[i:], ',')
		end := i + j
		if j < 0 {
			end = i + len(TrimEOL(line[i:]))
		}
		if !over {
			d.rec = append(d.rec, line[i:end]...)
		}
		fld.end = len(d.rec)
		d.fields = append(d.fields, fld)
		if j < 0 {
			break
		}
		i = end + 1
	}
	if over {
		d.fail(d.start, 0, d.fields[0].off-int64(d.fields[0].col-1), "", fmt.Sprintf("record longer than the limit of %d bytes", d.lim.MaxLineBytes))
	}
	return true, false
}

// fieldName names column i (0-based) for errors: "column 3 (time)".
func fieldName(f *CSVFormat, i int) string {
	if i >= len(f.cols) {
		return fmt.Sprintf("column %d", i+1)
	}
	switch c := f.cols[i]; c.kind {
	case colTime:
		return fmt.Sprintf("column %d (time)", i+1)
	case colMetric:
		return fmt.Sprintf("column %d (metric %q)", i+1, c.name)
	case colLabel:
		return fmt.Sprintf("column %d (label %q)", i+1, c.name)
	}
	return fmt.Sprintf("column %d", i+1)
}

// row turns the fields of the record into samples.
func (d *CSVDecoder) row() {
	f := d.f
	field := func(i int) ([]byte, *csvField) {
		if i >= len(d.fields) {
			return nil, nil
		}
		fl := &d.fields[i]
		return d.rec[fl.start:fl.end], fl
	}
	failAt := func(i int, msg string) {
		if _, fl := field(i); fl != nil {
			d.fail(fl.line, fl.col, fl.off, fieldName(f, i), msg)
			return
		}
		last := d.fields[len(d.fields)-1]
		d.fail(last.line, 0, last.off-int64(last.col-1), fieldName(f, i), fmt.Sprintf("missing: the record has %d columns", len(d.fields)))
	}
	t := d.now
	if f.timeCol >= 0 {
		b, fl := field(f.timeCol)
		if fl == nil {
			failAt(f.timeCol, "")
			return
		}
		var err error
		if t, err = f.time.parse(b); err != nil {
			failAt(f.timeCol, err.Error())
			return
		}
	}
	d.base = d.base[:0]
	name := ""
	for i, c := range f.cols {
		if c.kind != colLabel {
			continue
		}
		b, _ := field(i)
		if len(b) == 0 {
			continue // an empty value is no label
		}
		if len(b) > d.lim.MaxLabelValueBytes {
			failAt(i, fmt.Sprintf("label value of %d bytes is longer than the limit of %d", len(b), d.lim.MaxLabelValueBytes))
			return
		}
		if !isValidUTF8(b) {
			failAt(i, "invalid UTF-8 in a label value")
			return
		}
		if i == f.nameCol {
			name = d.strs.get(b)
			continue
		}
		d.base = append(d.base, labels.Label{Name: c.name, Value: d.strs.get(b)})
	}
	n := 0
	for i, c := range f.cols {
		if c.kind != colMetric {
			continue
		}
		b, fl := field(i)
		if len(b) == 0 {
			continue // VictoriaMetrics skips empty metric fields
		}
		v, err := parseCSVValue(b)
		if err != nil {
			d.fail(fl.line, fl.col, fl.off, fieldName(f, i), err.Error())
			d.samples = d.samples[:0]
			return
		}
		d.sb.Reset()
		for _, l := range d.base {
			d.sb.Add(l.Name, l.Value)
		}
		if name != "" {
			d.sb.Add(labels.MetricName, name)
		} else {
			d.sb.Add(labels.MetricName, c.name)
		}
		d.sb.Sort()
		d.samples = append(d.samples, Sample{Labels: d.sb.Labels(), T: t, V: v})
		n++
	}
	if n == 0 && len(d.fields) < len(f.cols) {
		failAt(len(f.cols)-1, "")
	}
}
