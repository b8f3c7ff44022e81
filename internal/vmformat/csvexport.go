package vmformat

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/labels"
)

type exportColKind uint8

const (
	exportLabel exportColKind = iota
	exportValue
	exportTimestamp
)

type exportCol struct {
	kind  exportColKind
	label string // exportLabel: its name (__name__ for the series name)
	time  timeFormat
}

// CSVExportFormat is the field list of a CSV export (doc.go), from
// ParseCSVExportFormat.
type CSVExportFormat struct {
	cols []exportCol
}

// ParseCSVExportFormat reads a field list such as
// "__name__,__value__,__timestamp__:unix_ms,host".
func ParseCSVExportFormat(spec string) (*CSVExportFormat, error) {
	if spec == "" {
		return nil, fmt.Errorf("empty csv export format: want fields such as __name__,__value__,__timestamp__:unix_ms,<label>")
	}
	f := &CSVExportFormat{}
	for i, entry := range strings.Split(spec, ",") {
		c := exportCol{}
		switch {
		case entry == "__value__":
			c.kind = exportValue
		case entry == "__timestamp__":
			c.kind = exportTimestamp
			c.time, _ = parseTimeFormat("unix_ms")
		case strings.HasPrefix(entry, "__timestamp__:"):
			c.kind = exportTimestamp
			var err error
			if c.time, err = parseTimeFormat(entry[len("__timestamp__:"):]); err != nil {
				return nil, fmt.Errorf("csv export field %d %q: %w", i+1, entry, err)
			}
		case entry == "":
			return nil, fmt.Errorf("csv export field %d is empty", i+1)
		default:
			c.label = entry
		}
		f.cols = append(f.cols, c)
	}
	return f, nil
}

// String returns the field list.
func (f *CSVExportFormat) String() string {
	var b strings.Builder
	for i, c := range f.cols {
		if i > 0 {
			b.WriteByte(',')
		}
		switch c.kind {
		case exportValue:
			b.WriteString("__value__")
		case exportTimestamp:
			b.WriteString("__timestamp__:" + c.time.name)
		default:
			b.WriteString(c.label)
		}
	}
	return b.String()
}

// AppendCSVRow appends one row, "\n" included, for the sample (t, v) of
// lset. Fields holding a comma, a quote or a line end are quoted.
func AppendCSVRow(dst []byte, f *CSVExportFormat, lset labels.Labels, t int64, v float64) []byte {
	for i, c := range f.cols {
		if i > 0 {
			dst = append(dst, ',')
		}
		switch c.kind {
		case exportValue:
			dst = AppendCSVValue(dst, v)
		case exportTimestamp:
			start := len(dst)
			dst = c.time.append(dst, t)
			if strings.ContainsAny(string(dst[start:]), ",\"\r\n") { // a custom layout may hold them
				field := string(dst[start:])
				dst = appendCSVField(dst[:start], field)
			}
		default:
			dst = appendCSVField(dst, lset.Get(c.label))
		}
	}
	return append(dst, '\n')
}

// appendCSVField appends s, quoted as RFC 4180 says if it needs to be.
func appendCSVField(dst []byte, s string) []byte {
	if !strings.ContainsAny(s, ",\"\r\n") {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	for {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			break
		}
		dst = append(dst, s[:i+1]...)
		dst = append(dst, '"')
		s = s[i+1:]
	}
	dst = append(dst, s...)
	return append(dst, '"')
}

func isValidUTF8(b []byte) bool { return utf8.Valid(b) }
