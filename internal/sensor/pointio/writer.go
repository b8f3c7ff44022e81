package pointio

import (
	"bufio"
	"fmt"
	"io"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/sensor/enum"
)

// Shape is what the items of an answer are.
type Shape uint8

// The shapes of answers (doc.go).
const (
	Points    Shape = iota // (t, v): extract
	Rows                   // (t, value per column): aggregations
	Intervals              // (from, to): search
)

// String returns the shape's key in framed JSON: points, rows or
// intervals.
func (s Shape) String() string { return enum.Name(shapeNames[:], s, "Shape") }

var shapeNames = [...]string{Points: "points", Rows: "rows", Intervals: "intervals"}

// Layout is what a Writer writes; Begin takes it.
type Layout struct {
	Shape Shape
	// Columns names the values of a row (Rows only), e.g. "min", "max":
	// at least one, unique, not empty, and neither "t" nor "metric".
	Columns []string
	// Series frames the items by series (the native API's answers): every
	// item is written between BeginSeries and EndSeries.
	Series bool
}

// Writer writes an answer as it is produced: each item goes out (through
// a bufio.Writer) when it is written, never the whole answer at once.
//
//	w, _ := pointio.NewWriter("json", rw)
//	rw.Header().Set("Content-Type", w.ContentType())
//	for it.Next() {
//		if err := w.Point(it.At()); err != nil { … }
//	}
//	err := w.Close()
//
// Calls out of order (an item of another shape, EndSeries without
// BeginSeries, …) return an error; every error is sticky. If an answer
// cannot be finished, do not Close it: a client sees JSON without its
// closing brackets as incomplete.
type Writer interface {
	// ContentType is the media type for the Content-Type header:
	// text/csv, application/json or application/msgpack.
	ContentType() string
	// Begin sets the layout. It may be called once, before anything else;
	// without it, the writer writes points without series framing.
	Begin(l Layout) error
	// BeginSeries starts the items of the series ls (Layout.Series only).
	BeginSeries(ls labels.Labels) error
	// EndSeries ends the series BeginSeries started.
	EndSeries() error
	// Point writes a point (Shape Points).
	Point(t int64, v float64) error
	// Row writes a row, one value per column of the Layout (Shape Rows).
	Row(t int64, values []float64) error
	// Interval writes an interval (Shape Intervals).
	Interval(from, to int64) error
	// Flush sends what is buffered to the io.Writer.
	Flush() error
	// Close ends the answer (closing brackets in JSON) and flushes it. It
	// does not close the io.Writer.
	Close() error
}

// NewWriter returns a Writer of format csv, json or msgp to w.
func NewWriter(format string, w io.Writer) (Writer, error) {
	var enc encoder
	switch format {
	case FormatCSV:
		enc = &csvEncoder{}
	case FormatJSON:
		enc = &jsonEncoder{}
	case FormatMsgp:
		enc = msgpEncoder{}
	default:
		return nil, fmt.Errorf("unknown output format %q: want csv, json or msgp", format)
	}
	return &writer{bw: bufio.NewWriterSize(w, 32<<10), enc: enc}, nil
}

// encoder appends the bytes of one format. first says that the item is
// the first of its series (or of the answer).
type encoder interface {
	contentType() string
	begin(dst []byte, l *Layout) []byte
	beginSeries(dst []byte, l *Layout, ls labels.Labels, first bool) []byte
	endSeries(dst []byte) []byte
	point(dst []byte, first bool, t int64, v float64) []byte
	row(dst []byte, l *Layout, first bool, t int64, vs []float64) []byte
	interval(dst []byte, first bool, from, to int64) []byte
	end(dst []byte, l *Layout) []byte
}

type writerState uint8

const (
	stateFresh    writerState = iota // before Begin
	stateOpen                        // between items, outside a series
	stateInSeries                    // between BeginSeries and EndSeries
	stateClosed
)

type writer struct {
	bw     *bufio.Writer
	enc    encoder
	l      Layout
	state  writerState
	series int   // series begun
	items  int   // items in the current series, or in the answer
	err    error // sticky
}

func (w *writer) ContentType() string { return w.enc.contentType() }

func (w *writer) fail(format string, args ...any) error {
	w.err = fmt.Errorf("pointio: "+format, args...)
	return w.err
}

// write sends b to the bufio.Writer; b was appended to its AvailableBuffer.
func (w *writer) write(b []byte) error {
	if _, err := w.bw.Write(b); err != nil {
		w.err = err
	}
	return w.err
}

func (w *writer) Begin(l Layout) error {
	if w.err != nil {
		return w.err
	}
	if w.state != stateFresh {
		return w.fail("Begin after the answer has begun")
	}
	switch l.Shape {
	case Points, Intervals:
		if len(l.Columns) > 0 {
			return w.fail("columns %q for shape %s, which has none", l.Columns, l.Shape)
		}
	case Rows:
		if len(l.Columns) == 0 {
			return w.fail("rows without columns")
		}
		seen := make(map[string]bool, len(l.Columns))
		for _, c := range l.Columns {
			switch {
			case c == "":
				return w.fail("an empty column name")
			case c == "t", c == "metric":
				return w.fail("column name %q is reserved: t is the timestamp, metric the series' labels", c)
			case seen[c]:
				return w.fail("column name %q appears twice", c)
			}
			seen[c] = true
		}
		l.Columns = append([]string(nil), l.Columns...)
	default:
		return w.fail("unknown shape %s", l.Shape)
	}
	w.l = l
	w.state = stateOpen
	return w.write(w.enc.begin(w.bw.AvailableBuffer(), &w.l))
}

func (w *writer) BeginSeries(ls labels.Labels) error {
	if err := w.begin(); err != nil {
		return err
	}
	switch {
	case !w.l.Series:
		return w.fail("BeginSeries without Layout.Series")
	case w.state == stateInSeries:
		return w.fail("BeginSeries inside a series: call EndSeries first")
	}
	w.state = stateInSeries
	w.series++
	w.items = 0
	return w.write(w.enc.beginSeries(w.bw.AvailableBuffer(), &w.l, ls, w.series == 1))
}

func (w *writer) EndSeries() error {
	if err := w.begin(); err != nil {
		return err
	}
	if w.state != stateInSeries {
		return w.fail("EndSeries without BeginSeries")
	}
	w.state = stateOpen
	return w.write(w.enc.endSeries(w.bw.AvailableBuffer()))
}

func (w *writer) Point(t int64, v float64) error {
	if err := w.item(Points); err != nil {
		return err
	}
	return w.write(w.enc.point(w.bw.AvailableBuffer(), w.items == 1, t, v))
}

func (w *writer) Row(t int64, values []float64) error {
	if err := w.item(Rows); err != nil {
		return err
	}
	if len(values) != len(w.l.Columns) {
		return w.fail("row of %d values for %d columns", len(values), len(w.l.Columns))
	}
	return w.write(w.enc.row(w.bw.AvailableBuffer(), &w.l, w.items == 1, t, values))
}

func (w *writer) Interval(from, to int64) error {
	if err := w.item(Intervals); err != nil {
		return err
	}
	return w.write(w.enc.interval(w.bw.AvailableBuffer(), w.items == 1, from, to))
}

func (w *writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = err
	}
	return w.err
}

func (w *writer) Close() error {
	if w.state == stateClosed || w.err != nil {
		return w.err
	}
	if err := w.begin(); err != nil {
		return err
	}
	if w.state == stateInSeries {
		return w.fail("Close inside a series: call EndSeries first")
	}
	w.state = stateClosed
	if err := w.write(w.enc.end(w.bw.AvailableBuffer(), &w.l)); err != nil {
		return err
	}
	return w.Flush()
}

// begin begins the default layout if Begin was not called.
func (w *writer) begin() error {
	switch {
	case w.err != nil:
		return w.err
	case w.state == stateClosed:
		return w.fail("writer is closed")
	case w.state == stateFresh:
		return w.Begin(Layout{})
	}
	return nil
}

// item checks that an item of shape s may be written now and counts it.
func (w *writer) item(s Shape) error {
	if err := w.begin(); err != nil {
		return err
	}
	switch {
	case w.l.Shape != s:
		return w.fail("%s item in an answer of %s", s, w.l.Shape)
	case w.l.Series && w.state != stateInSeries:
		return w.fail("%s item outside a series: call BeginSeries first", s)
	}
	w.items++
	return nil
}
