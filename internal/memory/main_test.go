package memory

import (
	"encoding/binary"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newManager returns a manager that is checked for consistency and closed
// when the test ends.
func newManager(t testing.TB, opts Options) *Manager {
	t.Helper()
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
		if err := m.Check(); err != nil {
			t.Error(err)
		}
	})
	return m
}

func mustAlloc(t testing.TB, m *Manager, part int64) Ref {
	t.Helper()
	id, v, err := m.Alloc(part)
	if err != nil {
		t.Fatalf("Alloc(%d): %v", part, err)
	}
	r := MakeRef(id, v)
	b, ok := m.Bytes(r)
	if !ok {
		t.Fatalf("Alloc(%d) = %v, not valid", part, r)
	}
	fillPattern(b, r)
	return r
}

// fillPattern writes a pattern that encodes r into every 8-byte word of b,
// so a reader can tell its block from any other block, version or poison.
func fillPattern(b []byte, r Ref) {
	for i := 0; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], patternWord(r, i))
	}
}

// checkPattern returns the offset of the first word of b that does not
// hold r's pattern, or -1.
func checkPattern(b []byte, r Ref) int {
	for i := 0; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:]) != patternWord(r, i) {
			return i
		}
	}
	return -1
}

func patternWord(r Ref, off int) uint64 {
	return uint64(r) ^ uint64(off+1)*0x9E3779B97F4A7C15
}
