package carbon

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// DefaultMaxPickleSize is carbon's PICKLE_RECEIVER_MAX_LENGTH (2**20).
const DefaultMaxPickleSize = 1 << 20

// PickleEntry is one (path, (timestamp, value)) entry of a pickle payload,
// with its numbers converted as carbon's float() does.
type PickleEntry struct {
	Path []byte // valid only during the callback; may alias the payload
	T, V float64
}

// PickleError says why a payload was refused and where.
type PickleError struct {
	Offset int    // byte offset of the opcode in the payload
	Op     byte   // the opcode, 0 if none
	Msg    string // what was wrong
}

func (e *PickleError) Error() string {
	if e.Op != 0 {
		return fmt.Sprintf("pickle opcode %s at byte %d: %s", opName(e.Op), e.Offset, e.Msg)
	}
	return fmt.Sprintf("pickle at byte %d: %s", e.Offset, e.Msg)
}

// EntryError says why one entry of a payload was skipped (carbon skips it
// too and goes on with the others).
type EntryError struct {
	Index int // position of the entry in the list
	Msg   string
}

func (e *EntryError) Error() string { return fmt.Sprintf("pickle entry %d: %s", e.Index, e.Msg) }

// DecodePickle decodes the payload of one pickle frame (without its length
// prefix) as carbon's MetricPickleReceiver does: a list (or tuple) of
// (path, (timestamp, value)) tuples (or lists), where path is a str (or
// bytes holding UTF-8) and timestamp and value are what Python's float()
// takes: int, float, bool or a numeric str.
//
// The decoder is not an unpickler: it runs no code and builds no objects
// but None, bools, numbers, strings, bytes, lists and tuples. It knows only
// the opcodes that Python's pickle (protocols 0 to 5, Python 2 and 3) emits
// for that shape, with the memo; every other opcode — GLOBAL,
// STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, dicts, sets, persistent
// ids, extensions, out-of-band buffers — refuses the whole payload with a
// *PickleError naming the opcode and its byte offset. Carbon's own
// SafeUnpickler allows two classes; no sender needs them for this shape.
//
// fn is called for every well-formed entry, in order; an entry of the wrong
// shape is reported to skip (and carbon skips it too). A *PickleError means
// nothing was passed to fn. Memory is linear in len(payload).
func DecodePickle(payload []byte, fn func(PickleEntry), skip func(*EntryError)) error {
	top, err := unpickle(payload)
	if err != nil {
		return err
	}
	if top.kind != kList && top.kind != kTuple {
		return &PickleError{Msg: fmt.Sprintf("top-level object is %s, want a list of (path, (timestamp, value))", top.kindName())}
	}
	for i, e := range top.items {
		path, t, v, msg := entry(e)
		if msg != "" {
			if skip != nil {
				skip(&EntryError{Index: i, Msg: msg})
			}
			continue
		}
		fn(PickleEntry{Path: path, T: t, V: v})
	}
	return nil
}

func entry(e *pval) (path []byte, t, v float64, msg string) {
	if (e.kind != kList && e.kind != kTuple) || len(e.items) != 2 {
		return nil, 0, 0, fmt.Sprintf("%s, want (path, (timestamp, value))", e.describe())
	}
	p, dp := e.items[0], e.items[1]
	if p.kind != kStr && p.kind != kBytes {
		return nil, 0, 0, fmt.Sprintf("path is %s, want a string", p.kindName())
	}
	if p.kind == kBytes && !utf8.Valid(p.s) {
		return nil, 0, 0, "path is bytes that are not UTF-8"
	}
	if (dp.kind != kList && dp.kind != kTuple) || len(dp.items) != 2 {
		return nil, 0, 0, fmt.Sprintf("datapoint is %s, want (timestamp, value)", dp.describe())
	}
	var ok bool
	if t, ok = dp.items[0].float(); !ok {
		return nil, 0, 0, fmt.Sprintf("timestamp is %s, not a number", dp.items[0].describe())
	}
	if v, ok = dp.items[1].float(); !ok {
		return nil, 0, 0, fmt.Sprintf("value is %s, not a number", dp.items[1].describe())
	}
	return p.s, t, v, ""
}

type pkind uint8

const (
	kNone pkind = iota
	kBool
	kInt // num holds the float64 of the int
	kFloat
	kStr   // s holds UTF-8
	kBytes // s holds the bytes
	kList
	kTuple
)

// pval is a decoded value. Lists are shared by pointer, as Python shares
// them through the memo.
type pval struct {
	kind  pkind
	num   float64
	s     []byte
	items []*pval
}

func (p *pval) kindName() string {
	return [...]string{"None", "bool", "int", "float", "str", "bytes", "list", "tuple"}[p.kind]
}

func (p *pval) describe() string {
	if p.kind == kList || p.kind == kTuple {
		return fmt.Sprintf("a %s of %d", p.kindName(), len(p.items))
	}
	return "a " + p.kindName()
}

// float is Python's float(x) for the kinds a datapoint may hold.
func (p *pval) float() (float64, bool) {
	switch p.kind {
	case kBool, kInt, kFloat:
		return p.num, true
	case kStr, kBytes:
		return parsePyFloat(bytes.TrimSpace(p.s))
	}
	return 0, false
}

// Opcodes (Python's Lib/pickle.py names).
const (
	opMark           = '('
	opStop           = '.'
	opNone           = 'N'
	opNewTrue        = '\x88'
	opNewFalse       = '\x89'
	opInt            = 'I'
	opBinInt         = 'J'
	opBinInt1        = 'K'
	opBinInt2        = 'M'
	opLong           = 'L'
	opLong1          = '\x8a'
	opLong4          = '\x8b'
	opFloat          = 'F'
	opBinFloat       = 'G'
	opString         = 'S'
	opBinString      = 'T'
	opShortBinString = 'U'
	opUnicode        = 'V'
	opBinUnicode     = 'X'
	opShortBinUni    = '\x8c'
	opBinUnicode8    = '\x8d'
	opBinBytes       = 'B'
	opShortBinBytes  = 'C'
	opBinBytes8      = '\x8e'
	opByteArray8     = '\x96'
	opEmptyList      = ']'
	opList           = 'l'
	opAppend         = 'a'
	opAppends        = 'e'
	opEmptyTuple     = ')'
	opTuple          = 't'
	opTuple1         = '\x85'
	opTuple2         = '\x86'
	opTuple3         = '\x87'
	opPut            = 'p'
	opBinPut         = 'q'
	opLongBinPut     = 'r'
	opMemoize        = '\x94'
	opGet            = 'g'
	opBinGet         = 'h'
	opLongBinGet     = 'j'
	opProto          = '\x80'
	opFrame          = '\x95'
)

var opNames = map[byte]string{
	opMark: "MARK", opStop: "STOP", opNone: "NONE", opNewTrue: "NEWTRUE", opNewFalse: "NEWFALSE",
	opInt: "INT", opBinInt: "BININT", opBinInt1: "BININT1", opBinInt2: "BININT2", opLong: "LONG",
	opLong1: "LONG1", opLong4: "LONG4", opFloat: "FLOAT", opBinFloat: "BINFLOAT", opString: "STRING",
	opBinString: "BINSTRING", opShortBinString: "SHORT_BINSTRING", opUnicode: "UNICODE",
	opBinUnicode: "BINUNICODE", opShortBinUni: "SHORT_BINUNICODE", opBinUnicode8: "BINUNICODE8",
	opBinBytes: "BINBYTES", opShortBinBytes: "SHORT_BINBYTES", opBinBytes8: "BINBYTES8",
	opByteArray8: "BYTEARRAY8", opEmptyList: "EMPTY_LIST", opList: "LIST", opAppend: "APPEND",
	opAppends: "APPENDS", opEmptyTuple: "EMPTY_TUPLE", opTuple: "TUPLE", opTuple1: "TUPLE1",
	opTuple2: "TUPLE2", opTuple3: "TUPLE3", opPut: "PUT", opBinPut: "BINPUT", opLongBinPut: "LONG_BINPUT",
	opMemoize: "MEMOIZE", opGet: "GET", opBinGet: "BINGET", opLongBinGet: "LONG_BINGET",
	opProto: "PROTO", opFrame: "FRAME",
	// Refused ones, named in errors.
	'c': "GLOBAL", '\x93': "STACK_GLOBAL", 'R': "REDUCE", 'b': "BUILD", 'i': "INST", 'o': "OBJ",
	'\x81': "NEWOBJ", '\x92': "NEWOBJ_EX", 'P': "PERSID", 'Q': "BINPERSID", '\x82': "EXT1",
	'\x83': "EXT2", '\x84': "EXT4", 'd': "DICT", '}': "EMPTY_DICT", 's': "SETITEM", 'u': "SETITEMS",
	'\x8f': "EMPTY_SET", '\x90': "ADDITEMS", '\x91': "FROZENSET", '\x97': "NEXT_BUFFER",
	'\x98': "READONLY_BUFFER", '0': "POP", '1': "POP_MARK", '2': "DUP",
}

func opName(op byte) string {
	q := fmt.Sprintf("'\\x%02x'", op)
	if op >= ' ' && op < 0x7f {
		q = fmt.Sprintf("'%c'", op)
	}
	if n, ok := opNames[op]; ok {
		return q + " (" + n + ")"
	}
	return q
}

// maxIntDigits bounds the text of INT and LONG: float64 reaches 1.8e308,
// and converting a longer number costs time for nothing.
const maxIntDigits = 400

// unpickle runs the restricted machine over b and returns the object STOP
// pops. Bytes after STOP are ignored, as pickle.loads does.
func unpickle(b []byte) (*pval, error) {
	var (
		stack []*pval
		marks []int
		memo  = map[uint64]*pval{}
		pos   int
		op    byte
		opPos int
	)
	fail := func(format string, a ...any) error {
		return &PickleError{Offset: opPos, Op: op, Msg: fmt.Sprintf(format, a...)}
	}
	need := func(n uint64) ([]byte, error) {
		if n > uint64(len(b)-pos) {
			return nil, fail("needs %d bytes, %d left", n, len(b)-pos)
		}
		s := b[pos : pos+int(n)]
		pos += int(n)
		return s, nil
	}
	line := func() ([]byte, error) {
		i := bytes.IndexByte(b[pos:], '\n')
		if i < 0 {
			return nil, fail("no newline ends its argument")
		}
		s := b[pos : pos+i]
		pos += i + 1
		return s, nil
	}
	pop := func() (*pval, error) {
		if len(stack) == 0 || len(marks) > 0 && marks[len(marks)-1] == len(stack) {
			return nil, fail("stack empty")
		}
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		return v, nil
	}
	popMark := func() ([]*pval, error) {
		if len(marks) == 0 {
			return nil, fail("no MARK before it")
		}
		m := marks[len(marks)-1]
		marks = marks[:len(marks)-1]
		items := append([]*pval(nil), stack[m:]...)
		stack = stack[:m]
		return items, nil
	}
	top := func() (*pval, error) {
		if len(stack) == 0 || len(marks) > 0 && marks[len(marks)-1] == len(stack) {
			return nil, fail("stack empty")
		}
		return stack[len(stack)-1], nil
	}
	push := func(v *pval) { stack = append(stack, v) }
	str := func(s []byte) error {
		if !utf8.Valid(s) {
			return fail("string is not UTF-8")
		}
		push(&pval{kind: kStr, s: s})
		return nil
	}
	u := func(s []byte) uint64 {
		var x [8]byte
		copy(x[:], s)
		return binary.LittleEndian.Uint64(x[:])
	}
	for pos < len(b) {
		opPos, op = pos, b[pos]
		pos++
		var err error
		switch op {
		case opStop:
			v, err := pop()
			if err != nil {
				return nil, err
			}
			return v, nil
		case opMark:
			marks = append(marks, len(stack))
		case opProto:
			var s []byte
			if s, err = need(1); err == nil && s[0] > 5 {
				err = fail("protocol %d unknown", s[0])
			}
		case opFrame:
			_, err = need(8)
		case opNone:
			push(&pval{kind: kNone})
		case opNewTrue, opNewFalse:
			push(&pval{kind: kBool, num: b2f(op == opNewTrue)})
		case opInt:
			var s []byte
			if s, err = line(); err != nil {
				break
			}
			switch string(s) {
			case "01", "00": // Python 2's True and False
				push(&pval{kind: kBool, num: b2f(string(s) == "01")})
			default:
				var v float64
				if v, err = parseInt(s, false); err != nil {
					err = fail("%v", err)
					break
				}
				push(&pval{kind: kInt, num: v})
			}
		case opLong:
			var s []byte
			if s, err = line(); err != nil {
				break
			}
			var v float64
			if v, err = parseInt(s, true); err != nil {
				err = fail("%v", err)
				break
			}
			push(&pval{kind: kInt, num: v})
		case opBinInt:
			var s []byte
			if s, err = need(4); err == nil {
				push(&pval{kind: kInt, num: float64(int32(binary.LittleEndian.Uint32(s)))})
			}
		case opBinInt1:
			var s []byte
			if s, err = need(1); err == nil {
				push(&pval{kind: kInt, num: float64(s[0])})
			}
		case opBinInt2:
			var s []byte
			if s, err = need(2); err == nil {
				push(&pval{kind: kInt, num: float64(binary.LittleEndian.Uint16(s))})
			}
		case opLong1, opLong4:
			var s []byte
			w := uint64(1)
			if op == opLong4 {
				w = 4
			}
			if s, err = need(w); err != nil {
				break
			}
			n := u(s)
			if op == opLong4 && int32(n) < 0 {
				err = fail("negative length")
				break
			}
			if n > maxIntDigits/2 {
				err = fail("integer of %d bytes is too large", n)
				break
			}
			if s, err = need(n); err == nil {
				push(&pval{kind: kInt, num: decodeLong(s)})
			}
		case opFloat:
			var s []byte
			if s, err = line(); err != nil {
				break
			}
			v, ok := parsePyFloat(bytes.TrimSpace(s))
			if !ok {
				err = fail("%q is not a float", truncate(s, 64))
				break
			}
			push(&pval{kind: kFloat, num: v})
		case opBinFloat:
			var s []byte
			if s, err = need(8); err == nil {
				push(&pval{kind: kFloat, num: math.Float64frombits(binary.BigEndian.Uint64(s))})
			}
		case opString:
			var s []byte
			if s, err = line(); err != nil {
				break
			}
			if s, err = unquotePy2(s); err != nil {
				err = fail("%v", err)
				break
			}
			err = str(s)
		case opBinString, opShortBinString, opBinUnicode, opShortBinUni, opBinUnicode8,
			opBinBytes, opShortBinBytes, opBinBytes8, opByteArray8:
			var w uint64
			switch op {
			case opShortBinString, opShortBinUni, opShortBinBytes:
				w = 1
			case opBinString, opBinUnicode, opBinBytes:
				w = 4
			default:
				w = 8
			}
			var s []byte
			if s, err = need(w); err != nil {
				break
			}
			n := u(s)
			if op == opBinString && int32(n) < 0 {
				err = fail("negative length")
				break
			}
			if s, err = need(n); err != nil {
				break
			}
			switch op {
			case opBinBytes, opShortBinBytes, opBinBytes8, opByteArray8:
				push(&pval{kind: kBytes, s: s})
			default: // Python 2 str decodes as UTF-8 (carbon's encoding='utf-8')
				err = str(s)
			}
		case opUnicode:
			var s []byte
			if s, err = line(); err != nil {
				break
			}
			if s, err = rawUnicodeEscape(s); err != nil {
				err = fail("%v", err)
				break
			}
			push(&pval{kind: kStr, s: s})
		case opEmptyList:
			push(&pval{kind: kList})
		case opList:
			var items []*pval
			if items, err = popMark(); err == nil {
				push(&pval{kind: kList, items: items})
			}
		case opAppend:
			var v, l *pval
			if v, err = pop(); err != nil {
				break
			}
			if l, err = top(); err != nil {
				break
			}
			if l.kind != kList {
				err = fail("appends to %s, not a list", l.kindName())
				break
			}
			l.items = append(l.items, v)
		case opAppends:
			var items []*pval
			if items, err = popMark(); err != nil {
				break
			}
			var l *pval
			if l, err = top(); err != nil {
				break
			}
			if l.kind != kList {
				err = fail("appends to %s, not a list", l.kindName())
				break
			}
			l.items = append(l.items, items...)
		case opEmptyTuple:
			push(&pval{kind: kTuple})
		case opTuple:
			var items []*pval
			if items, err = popMark(); err == nil {
				push(&pval{kind: kTuple, items: items})
			}
		case opTuple1, opTuple2, opTuple3:
			n := int(op-opTuple1) + 1
			items := make([]*pval, n)
			for i := n - 1; i >= 0 && err == nil; i-- {
				items[i], err = pop()
			}
			if err == nil {
				push(&pval{kind: kTuple, items: items})
			}
		case opPut, opBinPut, opLongBinPut, opMemoize:
			var idx uint64
			switch op {
			case opPut:
				var s []byte
				if s, err = line(); err == nil {
					if idx, err = strconv.ParseUint(string(s), 10, 32); err != nil {
						err = fail("memo index %q: not a number", truncate(s, 64))
					}
				}
			case opBinPut:
				var s []byte
				if s, err = need(1); err == nil {
					idx = uint64(s[0])
				}
			case opLongBinPut:
				var s []byte
				if s, err = need(4); err == nil {
					idx = u(s)
				}
			default:
				idx = uint64(len(memo))
			}
			if err != nil {
				break
			}
			var v *pval
			if v, err = top(); err == nil {
				memo[idx] = v
			}
		case opGet, opBinGet, opLongBinGet:
			var idx uint64
			var s []byte
			switch op {
			case opGet:
				if s, err = line(); err == nil {
					if idx, err = strconv.ParseUint(string(s), 10, 32); err != nil {
						err = fail("memo index %q: not a number", truncate(s, 64))
					}
				}
			case opBinGet:
				if s, err = need(1); err == nil {
					idx = uint64(s[0])
				}
			default:
				if s, err = need(4); err == nil {
					idx = u(s)
				}
			}
			if err != nil {
				break
			}
			v, ok := memo[idx]
			if !ok {
				err = fail("memo index %d was never stored", idx)
				break
			}
			push(v)
		default:
			return nil, fail("refused: only lists of (path, (timestamp, value)) tuples are accepted")
		}
		if err != nil {
			return nil, err
		}
	}
	return nil, &PickleError{Offset: len(b), Msg: "no STOP opcode: truncated"}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// parseInt parses the decimal text of INT or LONG (LONG's may end in 'L').
func parseInt(s []byte, long bool) (float64, error) {
	if long && len(s) > 0 && s[len(s)-1] == 'L' {
		s = s[:len(s)-1]
	}
	if len(s) > maxIntDigits {
		return 0, fmt.Errorf("integer of %d digits is too large", len(s))
	}
	if v, err := strconv.ParseInt(string(s), 10, 64); err == nil {
		return float64(v), nil
	}
	var z big.Int
	if _, ok := z.SetString(string(s), 10); !ok {
		return 0, fmt.Errorf("%q is not an integer", truncate(s, 64))
	}
	f, _ := new(big.Float).SetInt(&z).Float64()
	return f, nil
}

// decodeLong decodes LONG1/LONG4's little-endian two's complement bytes.
func decodeLong(s []byte) float64 {
	if len(s) == 0 {
		return 0
	}
	be := make([]byte, len(s))
	for i, c := range s {
		be[len(s)-1-i] = c
	}
	var z big.Int
	z.SetBytes(be)
	if s[len(s)-1]&0x80 != 0 {
		z.Sub(&z, new(big.Int).Lsh(big.NewInt(1), uint(8*len(s))))
	}
	f, _ := new(big.Float).SetInt(&z).Float64()
	return f
}

// unquotePy2 decodes STRING's argument: a Python 2 repr in single or
// double quotes with Python's string escapes.
func unquotePy2(s []byte) ([]byte, error) {
	if len(s) < 2 || (s[0] != '\'' && s[0] != '"') || s[len(s)-1] != s[0] {
		return nil, fmt.Errorf("argument is not a quoted string")
	}
	s = s[1 : len(s)-1]
	if bytes.IndexByte(s, '\\') < 0 {
		return s, nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i == len(s) {
			return nil, fmt.Errorf("string ends in '\\'")
		}
		switch c = s[i]; c {
		case '\n':
		case '\\', '\'', '"':
			out = append(out, c)
		case 'a':
			out = append(out, 7)
		case 'b':
			out = append(out, 8)
		case 'f':
			out = append(out, 12)
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'v':
			out = append(out, 11)
		case 'x':
			if i+2 >= len(s) {
				return nil, fmt.Errorf("truncated \\x escape")
			}
			v, err := strconv.ParseUint(string(s[i+1:i+3]), 16, 8)
			if err != nil {
				return nil, fmt.Errorf("bad \\x escape %q", s[i-1:i+3])
			}
			out = append(out, byte(v))
			i += 2
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := 0
			j := i
			for ; j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7'; j++ {
				v = v*8 + int(s[j]-'0')
			}
			out = append(out, byte(v))
			i = j - 1
		default: // Python keeps unknown escapes as they are
			out = append(out, '\\', c)
		}
	}
	return out, nil
}

// rawUnicodeEscape decodes UNICODE's argument (Python's
// raw-unicode-escape): \uXXXX and \UXXXXXXXX escapes, every other byte a
// Latin-1 character; the result is UTF-8.
func rawUnicodeEscape(s []byte) ([]byte, error) {
	out := make([]byte, 0, len(s))
	slashes := 0 // backslashes just before s[i]
	for i := 0; i < len(s); i++ {
		c := s[i]
		// A backslash starts an escape if an even number precede it.
		if c == '\\' && slashes%2 == 0 && i+1 < len(s) && (s[i+1] == 'u' || s[i+1] == 'U') {
			slashes = 0
			n := 4
			if s[i+1] == 'U' {
				n = 8
			}
			if i+2+n > len(s) {
				return nil, fmt.Errorf("truncated \\%c escape at byte %d", s[i+1], i)
			}
			v, err := strconv.ParseUint(string(s[i+2:i+2+n]), 16, 32)
			if err != nil || v > unicode.MaxRune || (v >= 0xD800 && v <= 0xDFFF) {
				return nil, fmt.Errorf("bad \\%c escape %q", s[i+1], s[i:i+2+n])
			}
			out = utf8.AppendRune(out, rune(v))
			i += 1 + n
			continue
		}
		if c == '\\' {
			slashes++
		} else {
			slashes = 0
		}
		out = utf8.AppendRune(out, rune(c))
	}
	return out, nil
}

// AppendPickle appends entries to dst as Python's pickle.dumps(protocol=2)
// of a list of (path, (timestamp, value)) tuples encodes them (paths as
// str, numbers as floats): a pickle frame's payload, for tests and load
// generators. Prefix it with its length for the wire.
func AppendPickle(dst []byte, entries []PickleEntry) []byte {
	dst = append(dst, opProto, 2, opEmptyList)
	for i, e := range entries {
		if i%1000 == 0 { // Python's pickler batches APPENDS by 1000
			if i > 0 {
				dst = append(dst, opAppends)
			}
			dst = append(dst, opMark)
		}
		dst = append(dst, opBinUnicode)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(e.Path)))
		dst = append(dst, e.Path...)
		dst = append(dst, opBinFloat)
		dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(e.T))
		dst = append(dst, opBinFloat)
		dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(e.V))
		dst = append(dst, opTuple2, opTuple2)
	}
	if len(entries) > 0 {
		dst = append(dst, opAppends)
	}
	return append(dst, opStop)
}
