package graphite

import (
	"encoding/binary"
	"math"
)

// A protocol-2 pickle writer of only what graphite-web's pickle answers
// hold: a list of dicts of str, int, float, None and lists of floats or
// None. Opcodes from CPython's Lib/pickle.py.
const (
	pkProto      = 0x80
	pkStop       = '.'
	pkMark       = '('
	pkEmptyList  = ']'
	pkAppends    = 'e'
	pkEmptyDict  = '}'
	pkSetItems   = 'u'
	pkNone       = 'N'
	pkBinInt     = 'J'  // 4-byte signed little-endian
	pkLong1      = 0x8a // 1-byte length, little-endian two's complement
	pkBinFloat   = 'G'  // 8-byte big-endian IEEE 754
	pkBinUnicode = 'X'  // 4-byte little-endian length, UTF-8
	pkNewTrue    = 0x88
	pkNewFalse   = 0x89
)

// pickleBatch is how many items one MARK…APPENDS or MARK…SETITEMS holds,
// as CPython batches them (any count unpickles; batching bounds the
// unpickler's stack).
const pickleBatch = 1000

// AppendPickleHeader appends the protocol-2 header.
func AppendPickleHeader(dst []byte) []byte { return append(dst, pkProto, 2) }

// AppendPickleStop ends a pickle.
func AppendPickleStop(dst []byte) []byte { return append(dst, pkStop) }

// AppendPickleString appends a str.
func AppendPickleString(dst []byte, s string) []byte {
	dst = append(dst, pkBinUnicode)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

// AppendPickleInt appends an int.
func AppendPickleInt(dst []byte, v int64) []byte {
	if v >= math.MinInt32 && v <= math.MaxInt32 {
		dst = append(dst, pkBinInt)
		return binary.LittleEndian.AppendUint32(dst, uint32(int32(v)))
	}
	dst = append(dst, pkLong1, 8)
	return binary.LittleEndian.AppendUint64(dst, uint64(v))
}

// AppendPickleFloat appends a float.
func AppendPickleFloat(dst []byte, v float64) []byte {
	dst = append(dst, pkBinFloat)
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(v))
}

// AppendPickleValue appends a Graphite value: None for NaN, else a float.
func AppendPickleValue(dst []byte, v float64) []byte {
	if math.IsNaN(v) {
		return append(dst, pkNone)
	}
	return AppendPickleFloat(dst, v)
}

// AppendPickleBool appends True or False.
func AppendPickleBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, pkNewTrue)
	}
	return append(dst, pkNewFalse)
}

// AppendPickleList appends a list of n items, each appended by item(dst, i).
func AppendPickleList(dst []byte, n int, item func(dst []byte, i int) []byte) []byte {
	dst = append(dst, pkEmptyList)
	for i := 0; i < n; i += pickleBatch {
		dst = append(dst, pkMark)
		for j := i; j < min(n, i+pickleBatch); j++ {
			dst = item(dst, j)
		}
		dst = append(dst, pkAppends)
	}
	return dst
}

// AppendPickleDict appends a dict of str keys, the value of keys[i]
// appended by value(dst, i).
func AppendPickleDict(dst []byte, keys []string, value func(dst []byte, i int) []byte) []byte {
	dst = append(dst, pkEmptyDict)
	for i := 0; i < len(keys); i += pickleBatch {
		dst = append(dst, pkMark)
		for j := i; j < min(len(keys), i+pickleBatch); j++ {
			dst = AppendPickleString(dst, keys[j])
			dst = value(dst, j)
		}
		dst = append(dst, pkSetItems)
	}
	return dst
}
