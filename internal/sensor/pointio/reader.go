package pointio

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// Reader reads the points of an upload body one at a time.
//
//	r, err := pointio.NewReader("csv", "0-1-,", pointio.Float64, body, pointio.Limits{})
//	for r.Next() {
//		t, v := r.At()
//		…
//	}
//	if err := r.Err(); err != nil { … } // an *InputError
type Reader interface {
	// Next advances to the next point. It returns false at the end of the
	// body and at the first error.
	Next() bool
	// At returns the timestamp (milliseconds) and value of the point Next
	// advanced to. The value has passed Type.Fit.
	At() (t int64, v float64)
	// Err returns nil after the end of the body, or the *InputError that
	// stopped Next. It is valid once Next has returned false.
	Err() error
	// Row returns the 1-based number of the current point: its line for
	// CSV (blank lines and a header count), its point number for JSON and
	// MessagePack.
	Row() int
	// Offset returns the 0-based byte offset in the body where the current
	// point starts.
	Offset() int64
}

// Names of the readers and writers in URLs.
const (
	FormatCSV  = "csv"
	FormatJSON = "json"
	FormatMsgp = "msgp"
)

// NewReader returns a Reader of body for the URL parts of an upload:
// reader is csv, json or msgp; format is a CSV format tsPos-valPos-sep
// (doc.go) for csv, and "default" for json and msgp. Every value read is
// checked with typ.Fit. NewReader reads nothing yet; its errors are about
// its arguments and name them.
func NewReader(reader, format string, typ Type, body io.Reader, lim Limits) (Reader, error) {
	if !typ.valid() {
		return nil, fmt.Errorf("unknown value type %s", typ)
	}
	lim = lim.withDefaults()
	b := base{typ: typ, lim: lim}
	switch reader {
	case FormatCSV:
		f, err := parseCSVFormat(format)
		if err != nil {
			return nil, err
		}
		return &csvReader{base: b, f: f, lr: newLineReader(body, lim.MaxLine)}, nil
	case FormatJSON, FormatMsgp:
		if format != "default" {
			return nil, fmt.Errorf("%s format %q: want \"default\"", reader, format)
		}
		if reader == FormatJSON {
			return newJSONReader(b, body), nil
		}
		return newMsgpReader(b, body), nil
	}
	return nil, fmt.Errorf("unknown reader %q: want csv, json or msgp", reader)
}

// base is the state every Reader shares.
type base struct {
	typ Type
	lim Limits

	n    int   // points returned so far
	row  int   // of the current point
	off  int64 // of the current point
	t    int64
	v    float64
	err  error // sticky: the *InputError that ended the body
	done bool
}

func (b *base) At() (int64, float64) { return b.t, b.v }
func (b *base) Err() error           { return b.err }
func (b *base) Row() int             { return b.row }
func (b *base) Offset() int64        { return b.off }

// fail ends the body with an *InputError and returns false for Next.
func (b *base) fail(row int, field string, off int64, err error) bool {
	b.err = &InputError{Row: row, Field: field, Offset: off, Err: err}
	b.done = true
	return false
}

// emit makes (t, v) the current point and returns true for Next.
func (b *base) emit(row int, off int64, t int64, v float64) bool {
	b.n++
	b.row, b.off, b.t, b.v = row, off, t, v
	return true
}

// overRows reports whether one more point exceeds MaxRows.
func (b *base) overRows() bool { return b.lim.MaxRows > 0 && b.n >= b.lim.MaxRows }

// readError wraps a failure of the body's io.Reader.
func readError(err error) error { return fmt.Errorf("read body: %w", err) }

// maxExactInt is 2^53: float64 holds every integer of at most this
// magnitude, and only some beyond it.
const maxExactInt = 1 << 53

// parseTimestamp reads a decimal integer of milliseconds.
func parseTimestamp(b []byte) (int64, error) {
	t, ok, isInt := parseInt(b)
	switch {
	case !isInt:
		return 0, fmt.Errorf("timestamp %s is not an integer (milliseconds)", quoteText(b))
	case !ok:
		return 0, fmt.Errorf("timestamp %s is out of range of int64 milliseconds", quoteText(b))
	}
	return t, nil
}

// parseValue reads the text of a value (a CSV field or a JSON number) as
// typ holds it. Integer types read plain integers exactly, so that an
// int64 beyond 2^53 is refused rather than rounded; other numbers go
// through strconv.ParseFloat.
func parseValue(b []byte, typ Type) (float64, error) {
	if typ.isInt() {
		if i, ok, isInt := parseInt(b); isInt {
			if !ok {
				return 0, fmt.Errorf("value %s does not fit %s", quoteText(b), typ)
			}
			return fitInt(i, typ)
		}
		v, err := parseFloat(b, 64, typ)
		if err != nil {
			return 0, err
		}
		if math.Abs(v) > maxExactInt && !math.IsInf(v, 0) && v == math.Trunc(v) {
			return 0, fmt.Errorf("value %s: an integer beyond 2^53 must be written in plain digits to be read exactly", quoteText(b))
		}
		return typ.Fit(v)
	}
	bits := 64
	if typ == Float32 {
		bits = 32 // the float32 nearest the text, not a rounding of the nearest float64
	}
	v, err := parseFloat(b, bits, typ)
	if err != nil {
		return 0, err
	}
	return typ.Fit(v)
}

// fitInt converts an integer value for an integer type: values are stored
// as float64, so one beyond 2^53 that float64 does not hold exactly is
// refused.
func fitInt(i int64, typ Type) (float64, error) {
	f := float64(i)
	if (i > maxExactInt || i < -maxExactInt) && (f >= -math.MinInt64 || int64(f) != i) {
		return 0, fmt.Errorf("value %d is not exactly representable: values are stored as float64, which holds every integer up to 2^53 but only some beyond", i)
	}
	return typ.Fit(f)
}

// parseFloat is strconv.ParseFloat of b, with errors of its own that do
// not keep b and name typ.
func parseFloat(b []byte, bits int, typ Type) (float64, error) {
	if len(b) == 0 {
		return 0, errors.New("the value is empty")
	}
	// The string does not outlive the call: the *NumError, which would
	// keep it, is dropped.
	v, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(b), len(b)), bits)
	if err != nil {
		// ErrRange is overflow to ±Inf; underflow gives the nearest value,
		// zero or subnormal, without an error.
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, fmt.Errorf("value %s does not fit %s", quoteText(b), typ)
		}
		return 0, fmt.Errorf("value %s is not a number", quoteText(b))
	}
	return v, nil
}

// parseInt reads b as [+-]digits. isInt says b has that form; ok says the
// integer fits int64.
func parseInt(b []byte) (i int64, ok, isInt bool) {
	if len(b) == 0 {
		return 0, false, false
	}
	neg := false
	s := b
	switch s[0] {
	case '-':
		neg = true
		s = s[1:]
	case '+':
		s = s[1:]
	}
	if len(s) == 0 {
		return 0, false, false
	}
	var u uint64
	ok = true
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false, false
		}
		if u > (math.MaxUint64-9)/10 {
			ok = false
			continue
		}
		u = u*10 + uint64(c-'0')
	}
	switch {
	case !ok:
	case neg && u <= -math.MinInt64:
		return -int64(u), true, true
	case !neg && u <= math.MaxInt64:
		return int64(u), true, true
	}
	return 0, false, true
}

// pointKeys checks the keys of a point written as a JSON object or a
// MessagePack map: "t" and "v", each once.
type pointKeys struct{ haveT, haveV bool }

// add takes the next key of the point and returns the field it names, "t"
// or "v"; or, for a key repeated or unknown, the field to report (the
// key, cut) and why.
func (k *pointKeys) add(key []byte) (field string, err error) {
	isT, isV := string(key) == "t", string(key) == "v"
	switch {
	case isT && k.haveT, isV && k.haveV:
		return string(key), fmt.Errorf("key %q appears twice", key)
	case isT:
		k.haveT = true
	case isV:
		k.haveV = true
	default:
		return truncKey(string(key)), fmt.Errorf(`unknown key %s: a point has the keys "t" (timestamp) and "v" (value)`, quoteText(key))
	}
	return string(key), nil
}

// missing returns the field of a key the point lacks and the error that
// says so, or nil when it has both.
func (k *pointKeys) missing() (field string, err error) {
	switch {
	case !k.haveT:
		return "t", errors.New(`missing key "t" (timestamp)`)
	case !k.haveV:
		return "v", errors.New(`missing key "v" (value)`)
	}
	return "", nil
}

// truncKey cuts an unknown key for InputError.Field.
func truncKey(k string) string {
	const max = 64
	if len(k) <= max {
		return k
	}
	k = k[:max]
	for len(k) > 0 && !utf8.ValidString(k) {
		k = k[:len(k)-1]
	}
	return k + "…"
}

// quoteText quotes input text for an error message, cut to 64 bytes.
func quoteText(b []byte) string {
	const max = 64
	if len(b) > max {
		return strconv.Quote(string(b[:max])) + "…"
	}
	return strconv.Quote(string(b))
}

// formatFloat formats v as the writers do.
func formatFloat(v float64) string { return string(appendFloat(nil, v)) }
