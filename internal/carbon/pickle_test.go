package carbon

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

type entryRec struct {
	Path string
	T, V float64
}

func decodeAll(t testing.TB, payload []byte) ([]entryRec, []string, error) {
	t.Helper()
	var got []entryRec
	var skipped []string
	err := DecodePickle(payload, func(e PickleEntry) {
		got = append(got, entryRec{string(e.Path), e.T, e.V})
	}, func(e *EntryError) { skipped = append(skipped, e.Error()) })
	return got, skipped, err
}

func TestDecodePickleFixtures(t *testing.T) {
	py3 := []entryRec{
		{"a.b.c", 1700000000, 1.5},
		{"x.y;env=prod;dc=eu", 1700000010.5, -2},
		{"big.int", 1700000020, 1e30},
		{"str.num", 1700000030, 42.5},
		{"bool.v", 1700000040, 1},
		{"caf\u00e9.\u20ac\\x", 1700000050, 0.25},
		{"a.b.c", 1700000060, 2.5},
	}
	py2 := []entryRec{{"a.b.c", 1700000000, 1.5}, {"x.yA", 1700000010, 1}}
	memo := []entryRec{{"memo.path", 1700000000, 7}, {"memo.path", 1700000000, 7}, {"memo.path", 1700000000, 7}}
	for file, want := range map[string][]entryRec{
		"pickle_proto0.bin":      py3,
		"pickle_proto1.bin":      py3,
		"pickle_proto2.bin":      py3,
		"pickle_proto3.bin":      py3,
		"pickle_proto4.bin":      py3,
		"pickle_proto5.bin":      py3,
		"pickle_memo_proto2.bin": memo,
		"pickle_memo_proto4.bin": memo,
		"pickle_py2_proto0.bin":  py2,
		"pickle_py2_proto2.bin":  py2,
	} {
		b, err := os.ReadFile(filepath.Join("testdata", file))
		require.NoError(t, err)
		got, skipped, err := decodeAll(t, b)
		require.NoError(t, err, file)
		require.Empty(t, skipped, file)
		require.Equal(t, want, got, file)
	}
}

// The malicious fixtures call os.system through GLOBAL/STACK_GLOBAL and
// REDUCE (and _codecs.encode, as Python 3 pickles bytes with protocol 2).
func TestDecodePickleRefusesCode(t *testing.T) {
	for file, want := range map[string]string{
		"evil_reduce_proto2.bin": `pickle opcode 'c' (GLOBAL) at byte 17: refused`,
		"evil_reduce_proto4.bin": `pickle opcode '\x93' (STACK_GLOBAL) at byte 38: refused`,
		"evil_global_proto0.bin": `pickle opcode 'c' (GLOBAL) at byte 0: refused`,
		"evil_codecs_proto2.bin": `pickle opcode 'c' (GLOBAL) at byte 5: refused`,
	} {
		b, err := os.ReadFile(filepath.Join("testdata", file))
		require.NoError(t, err)
		n := 0
		err = DecodePickle(b, func(PickleEntry) { n++ }, nil)
		require.EqualError(t, err, want+": only lists of (path, (timestamp, value)) tuples are accepted", file)
		require.Zero(t, n, "entries passed on from a refused payload")
	}
}

func TestDecodePickleErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, err string
	}{
		{"empty", "", "pickle at byte 0: no STOP opcode: truncated"},
		{"no stop", "]", "no STOP"},
		{"reduce", "]R.", `opcode 'R' (REDUCE) at byte 1: refused`},
		{"build", "]b.", `'b' (BUILD) at byte 1`},
		{"inst", "(i__main__\nX\n.", `'i' (INST) at byte 1`},
		{"dict", "}.", `'}' (EMPTY_DICT) at byte 0`},
		{"persid", "P1\n.", `'P' (PERSID)`},
		{"ext", "\x82\x01.", `'\x82' (EXT1)`},
		{"newobj", "\x81.", `NEWOBJ`},
		{"next buffer", "\x97.", `NEXT_BUFFER`},
		{"dup", "]2.", `'2' (DUP)`},
		{"unknown", "\xff.", `'\xff' at byte 0: refused`},
		{"proto 6", "\x80\x06].", "protocol 6 unknown"},
		{"top not list", "K\x01.", "top-level object is int"},
		{"stop on empty", ".", "opcode '.' (STOP) at byte 0: stack empty"},
		{"append to tuple", ")K\x01a.", "appends to tuple"},
		{"tuple without mark", "t.", "no MARK"},
		{"mark hides stack", "K\x01(\x85.", "stack empty"},
		{"get unknown", "h\x05.", "memo index 5 was never stored"},
		{"binunicode too long", "X\xff\xff\xff\x7fab.", "needs 2147483647 bytes, 3 left"},
		{"binunicode8 huge", "\x8d\xff\xff\xff\xff\xff\xff\xff\xffab.", "bytes, 3 left"},
		{"binstring negative", "T\xff\xff\xff\xffab.", "negative length"},
		{"long4 negative", "\x8b\xff\xff\xff\xff.", "negative length"},
		{"long1 too large", "\x8a\xff" + string(make([]byte, 255)) + ".", "too large"},
		{"int too long", "I" + string(bytes.Repeat([]byte("9"), 500)) + "\n.", "500 digits is too large"},
		{"not utf8", "X\x01\x00\x00\x00\xff.", "string is not UTF-8"},
		{"bad float", "Fxyz\n.", `"xyz" is not a float`},
		{"float no newline", "F1.5", "no newline"},
		{"bad unicode escape", "V\\uZZZZ\n.", "bad \\u escape"},
		{"surrogate", "V\\ud800\n.", "bad \\u escape"},
		{"bad string quote", "Sabc\n.", "not a quoted string"},
	} {
		_, _, err := decodeAll(t, []byte(tc.in))
		require.ErrorContains(t, err, tc.err, tc.name)
		var pe *PickleError
		require.True(t, errors.As(err, &pe), tc.name)
	}
}

func TestDecodePickleEntries(t *testing.T) {
	// Entries of the wrong shape are skipped, the others kept (carbon does
	// the same). Written as protocol 0 so the test reads.
	in := "(l" +
		"(Va\nI1\nI2\nta" + // (a, 1, 2): not (path, (t, v))
		"(Vb\n(I1\nNtta" + // value None: skipped (TypeError in carbon)
		"(I5\n(I1\nI2\ntta" + // path is an int
		"(Vc\n(I1\nI2\nI3\ntta" + // datapoint of 3
		"(Vd\n(S'1.5'\nVx\ntta" + // value str that is not a number
		"(Ve\n(I10\nF2.5\ntta" + // fine
		"(Vf\n(L-1L\nI01\ntta" + // fine: -1 is now, I01 is True
		"(Vg\n]ta" + // datapoint list of 0
		"(Vh\n(lI7\naI8\nata" + // datapoint as a list: fine
		"."
	got, skipped, err := decodeAll(t, []byte(in))
	require.NoError(t, err)
	require.Equal(t, []entryRec{{"e", 10, 2.5}, {"f", -1, 1}, {"h", 7, 8}}, got)
	require.Equal(t, []string{
		"pickle entry 0: a tuple of 3, want (path, (timestamp, value))",
		"pickle entry 1: value is a None, not a number",
		"pickle entry 2: path is int, want a string",
		"pickle entry 3: datapoint is a tuple of 3, want (timestamp, value)",
		"pickle entry 4: value is a str, not a number",
		"pickle entry 7: datapoint is a list of 0, want (timestamp, value)",
	}, skipped)
}

func TestPy2Strings(t *testing.T) {
	for in, want := range map[string]string{
		`'a.b'`:            "a.b",
		`"it's"`:           "it's",
		`'\x41\102\n\t\\'`: "AB\n\t\\",
		`'\q'`:             `\q`,
		`'\xe2\x82\xac'`:   "\u20ac",
		"'a\\\nb'":         "ab",
		`'\0'`:             "\x00",
	} {
		got, err := unquotePy2([]byte(in))
		require.NoError(t, err, in)
		require.Equal(t, want, string(got), in)
	}
	for _, in := range []string{`'a`, `a'`, `'`, `'\'`, `'\x4'`, `'\xzz'`} {
		_, err := unquotePy2([]byte(in))
		require.Error(t, err, in)
	}
	for in, want := range map[string]string{
		`a\u20acb`:   "a\u20acb",
		"\xe9":       "\u00e9",
		`\U0001F600`: "\U0001F600",
		`\\u0041`:    `\\u0041`,
		`\\\u0041`:   `\\A`,
		`\x`:         `\x`,
	} {
		got, err := rawUnicodeEscape([]byte(in))
		require.NoError(t, err, in)
		require.Equal(t, want, string(got), in)
	}
}

func FuzzPickle(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.bin"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("(l(Va\n(I1\nI2\ntta(Vb\n(I1\nNtta."))
	f.Add([]byte("]q\x00h\x00a."))
	f.Fuzz(func(t *testing.T, b []byte) {
		got1, skip1, err1 := decodeAll(t, b)
		got2, skip2, err2 := decodeAll(t, b)
		require.Equal(t, err1 == nil, err2 == nil, "not deterministic")
		if err1 != nil {
			require.Equal(t, err1.Error(), err2.Error())
			require.Empty(t, got1, "entries passed on from a refused payload")
			return
		}
		require.Equal(t, len(got1), len(got2))
		for i := range got1 {
			require.Equal(t, got1[i].Path, got2[i].Path)
			require.Equal(t, math.Float64bits(got1[i].T), math.Float64bits(got2[i].T))
			require.Equal(t, math.Float64bits(got1[i].V), math.Float64bits(got2[i].V))
		}
		require.Equal(t, skip1, skip2)
		// Round trip: what decoded, re-encoded as protocol 2, decodes alike.
		es := make([]PickleEntry, len(got1))
		for i, e := range got1 {
			es[i] = PickleEntry{Path: []byte(e.Path), T: e.T, V: e.V}
		}
		enc := AppendPickle(nil, es)
		got3, skip3, err := decodeAll(t, enc)
		require.NoError(t, err)
		require.Empty(t, skip3)
		require.Equal(t, len(got1), len(got3))
		for i := range got1 {
			require.Equal(t, got1[i].Path, got3[i].Path)
			require.Equal(t, math.Float64bits(got1[i].T), math.Float64bits(got3[i].T))
			require.Equal(t, math.Float64bits(got1[i].V), math.Float64bits(got3[i].V))
		}
	})
}
