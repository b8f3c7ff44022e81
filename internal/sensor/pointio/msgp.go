package pointio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// msgpReader reads MessagePack points (doc.go): one array of points or
// points one after another. It peeks at each code before the msgpack
// Decoder reads it, so that nil is never taken for 0 and a string length
// is checked against MaxPoint before anything is allocated for it.
type msgpReader struct {
	base
	src   byteSource
	dec   *msgpack.Decoder
	state msgpState
	left  int // msgpArray: elements not read yet
	key   []byte
}

type msgpState uint8

const (
	msgpStart  msgpState = iota
	msgpArray            // inside an array of points
	msgpStream           // points one after another
)

func newMsgpReader(b base, body io.Reader) *msgpReader {
	r := &msgpReader{base: b, src: newByteSource(body, b.lim.MaxPoint)}
	r.dec = msgpack.NewDecoder(&r.src) // a ByteScanner: the Decoder adds no buffer of its own
	return r
}

func (r *msgpReader) Next() bool {
	if r.done {
		return false
	}
	row := r.n + 1
	if r.state == msgpStart {
		c, err := r.src.peekByte()
		switch {
		case err == io.EOF:
			r.done = true
			return false
		case err != nil:
			return r.srcFail(row, "", 0, err)
		case isMsgpArray(c):
			n, hlen, err := r.peekLen(c)
			if err != nil {
				return r.srcFail(row, "", 0, err)
			}
			b, err := r.src.peek(hlen + 1)
			if n > 0 && err != nil {
				return r.srcFail(row, "", int64(len(b)), err)
			}
			switch {
			case n == 0 || isMsgpMap(b[hlen]) || isMsgpArray(b[hlen]):
				r.src.discard(hlen)
				r.state, r.left = msgpArray, n
			case n == 2:
				r.state = msgpStream // the body starts with a point [t, v]
			default:
				return r.fail(row, "", int64(hlen), fmt.Errorf("want an array of points or a point [t, v]: got an array of %d elements starting with %s", n, describeMsgp(b[hlen])))
			}
		case isMsgpMap(c):
			r.state = msgpStream
		default:
			return r.fail(row, "", 0, fmt.Errorf(`want a point (a map {"t", "v"} or an array [t, v]) or an array of points, got %s`, describeMsgp(c)))
		}
	}
	c, err := r.src.peekByte()
	if r.state == msgpArray {
		if r.left == 0 {
			switch {
			case err == io.EOF:
				r.done = true
				return false
			case err != nil:
				return r.srcFail(row, "", r.src.pos, err)
			}
			return r.fail(row, "", r.src.pos, fmt.Errorf("%s after the array of points, want the end of the body", describeMsgp(c)))
		}
		if err == io.EOF {
			return r.fail(row, "", r.src.pos, fmt.Errorf("unexpected end of input: the array of points has %d more point(s)", r.left))
		}
		r.left--
	} else if err == io.EOF {
		r.done = true
		return false
	}
	if err != nil {
		return r.srcFail(row, "", r.src.pos, err)
	}
	return r.point(row, c)
}

// point reads one point, a map or an array [t, v]; c is its first byte.
func (r *msgpReader) point(row int, c byte) bool {
	start := r.src.pos
	if r.overRows() {
		return r.fail(row, "", start, errMaxRows(r.lim.MaxRows))
	}
	r.src.beginPoint()
	var t int64
	var v float64
	switch {
	case isMsgpMap(c):
		n, err := r.dec.DecodeMapLen()
		if err != nil {
			return r.srcFail(row, "", start, err)
		}
		var keys pointKeys
		for range n {
			keyAt := r.src.pos
			key, err := r.readKey()
			if err != nil {
				return r.fieldFail(row, "", keyAt, start, err)
			}
			valAt := r.src.pos
			field, err := keys.add(key)
			if err != nil {
				return r.fail(row, field, keyAt, err)
			}
			if field == "t" {
				t, err = r.timestamp()
			} else {
				v, err = r.value()
			}
			if err != nil {
				return r.fieldFail(row, field, valAt, start, err)
			}
		}
		if field, err := keys.missing(); err != nil {
			return r.fail(row, field, start, err)
		}
	case isMsgpArray(c):
		n, err := r.dec.DecodeArrayLen()
		if err != nil {
			return r.srcFail(row, "", start, err)
		}
		if n != 2 {
			return r.fail(row, "", start, fmt.Errorf("a point array has 2 elements [t, v], this one %d", n))
		}
		valAt := r.src.pos
		if t, err = r.timestamp(); err != nil {
			return r.fieldFail(row, "t", valAt, start, err)
		}
		valAt = r.src.pos
		if v, err = r.value(); err != nil {
			return r.fieldFail(row, "v", valAt, start, err)
		}
	default:
		return r.fail(row, "", start, fmt.Errorf(`want a point (a map {"t", "v"} or an array [t, v]), got %s`, describeMsgp(c)))
	}
	r.src.endPoint()
	return r.emit(row, start, t, v)
}

// readKey reads a string key, refusing one longer than the point's
// remaining bytes before allocating for it. The slice is valid until the
// next call.
func (r *msgpReader) readKey() ([]byte, error) {
	c, err := r.src.peekByte()
	if err != nil {
		return nil, err
	}
	if !msgpcode.IsString(c) {
		return nil, fmt.Errorf(`want a string key "t" or "v", got %s`, describeMsgp(c))
	}
	n, hlen, err := r.peekLen(c)
	if err != nil {
		return nil, err
	}
	if int64(hlen)+int64(n) > r.src.end-r.src.pos {
		return nil, errMaxPoint(r.src.max)
	}
	if cap(r.key) < hlen+n {
		r.key = make([]byte, hlen+n)
	}
	r.key = r.key[:hlen+n]
	if _, err := io.ReadFull(&r.src, r.key); err != nil {
		return nil, err
	}
	return r.key[hlen:], nil
}

// timestamp reads an integer of any msgpack integer type.
func (r *msgpReader) timestamp() (int64, error) {
	c, err := r.src.peekByte()
	if err != nil {
		return 0, err
	}
	switch {
	case c == msgpcode.Uint64:
		u, err := r.dec.DecodeUint64()
		if err != nil {
			return 0, err
		}
		if u > math.MaxInt64 {
			return 0, fmt.Errorf("timestamp %d is out of range of int64 milliseconds", u)
		}
		return int64(u), nil
	case isMsgpInt(c):
		return r.dec.DecodeInt64()
	}
	return 0, fmt.Errorf("want an integer timestamp (milliseconds), got %s", describeMsgp(c))
}

// value reads a number of any msgpack integer or float type.
func (r *msgpReader) value() (float64, error) {
	c, err := r.src.peekByte()
	if err != nil {
		return 0, err
	}
	switch {
	case c == msgpcode.Float || c == msgpcode.Double:
		v, err := r.dec.DecodeFloat64()
		if err != nil {
			return 0, err
		}
		return r.typ.Fit(v)
	case c == msgpcode.Uint64:
		u, err := r.dec.DecodeUint64()
		if err != nil {
			return 0, err
		}
		if u > math.MaxInt64 {
			if r.typ.isInt() {
				return 0, fmt.Errorf("value %d does not fit %s", u, r.typ)
			}
			return r.typ.Fit(float64(u))
		}
		return r.intValue(int64(u))
	case isMsgpInt(c):
		i, err := r.dec.DecodeInt64()
		if err != nil {
			return 0, err
		}
		return r.intValue(i)
	}
	return 0, fmt.Errorf("want a number, got %s", describeMsgp(c))
}

func (r *msgpReader) intValue(i int64) (float64, error) {
	if r.typ.isInt() {
		return fitInt(i, r.typ)
	}
	return r.typ.Fit(float64(i))
}

// peekLen reads the length in the header of an array, map or string
// whose code is c, without consuming it: the length and the header's size.
func (r *msgpReader) peekLen(c byte) (n, hlen int, err error) {
	switch c {
	case msgpcode.Str8:
		hlen = 2
	case msgpcode.Array16, msgpcode.Map16, msgpcode.Str16:
		hlen = 3
	case msgpcode.Array32, msgpcode.Map32, msgpcode.Str32:
		hlen = 5
	default:
		if msgpcode.IsFixedString(c) {
			return int(c & msgpcode.FixedStrMask), 1, nil
		}
		return int(c & msgpcode.FixedMapMask), 1, nil // fixmap, fixarray
	}
	b, err := r.src.peek(hlen)
	if err != nil {
		return 0, 0, err
	}
	switch hlen {
	case 2:
		n = int(b[1])
	case 3:
		n = int(binary.BigEndian.Uint16(b[1:]))
	default:
		n = int(binary.BigEndian.Uint32(b[1:]))
	}
	return n, hlen, nil
}

// srcFail ends the body on an error of the source or decoder outside a
// field: at off, or where the input ended inside a point.
func (r *msgpReader) srcFail(row int, field string, off int64, err error) bool {
	return r.fieldFail(row, field, off, off, err)
}

// fieldFail ends the body on an error reading a field at off of the point
// at start: a limit is reported at the point, an unexpected end of input
// and a failure of the reader where they happened, anything else at the
// field.
func (r *msgpReader) fieldFail(row int, field string, off, start int64, err error) bool {
	switch {
	case errors.Is(err, ErrLimit):
		return r.fail(row, "", start, err)
	case (err == io.EOF || err == io.ErrUnexpectedEOF) && r.src.end == math.MaxInt64:
		return r.fail(row, field, off, errors.New("unexpected end of input"))
	case err == io.EOF, err == io.ErrUnexpectedEOF:
		return r.fail(row, field, r.src.pos, errors.New("unexpected end of input in a point"))
	case errors.Is(err, errRead):
		return r.fail(row, field, max(off, r.src.pos), readError(errors.Unwrap(err))) // off: after bytes peeked
	}
	return r.fail(row, field, off, err)
}

func isMsgpMap(c byte) bool {
	return msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32
}

func isMsgpArray(c byte) bool {
	return msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32
}

func isMsgpInt(c byte) bool {
	return msgpcode.IsFixedNum(c) || c >= msgpcode.Uint8 && c <= msgpcode.Int64
}

// describeMsgp names the msgpack type whose code is c, for errors.
func describeMsgp(c byte) string {
	switch {
	case c == msgpcode.Nil:
		return "nil"
	case c == msgpcode.False || c == msgpcode.True:
		return "a boolean"
	case c == msgpcode.Float:
		return "a float32"
	case c == msgpcode.Double:
		return "a float64"
	case isMsgpInt(c):
		return "an integer"
	case msgpcode.IsString(c):
		return "a string"
	case msgpcode.IsBin(c):
		return "binary data"
	case isMsgpArray(c):
		return "an array"
	case isMsgpMap(c):
		return "a map"
	case msgpcode.IsExt(c):
		return "an extension type"
	}
	return fmt.Sprintf("the unused code 0x%02x", c)
}
