package fuzzbytes

import "testing"

func TestReader(t *testing.T) {
	r := NewReader([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	if got := r.Byte(); got != 1 {
		t.Fatalf("Byte = %d, want 1", got)
	}
	if got := r.Uint64(); got != 0x0908070605040302 {
		t.Fatalf("Uint64 = %#x, want 0x0908070605040302", got)
	}
	if r.Empty() {
		t.Fatal("Empty with 2 bytes left")
	}
	if got := r.Uint64(); got != 0x0b0a {
		t.Fatalf("Uint64 past the end = %#x, want 0xb0a", got)
	}
	if !r.Empty() || r.Byte() != 0 || r.Uint64() != 0 {
		t.Fatal("an empty Reader gives other than zeros")
	}
}
