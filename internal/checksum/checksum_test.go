package checksum

import "testing"

// The standard check value of CRC-32C ("123456789" → 0xE3069283).
func TestCheckValue(t *testing.T) {
	if got := CRC32C([]byte("123456789")); got != 0xE3069283 {
		t.Fatalf("CRC32C = %#x", got)
	}
	h := New()
	h.Write([]byte("1234"))
	h.Write([]byte("56789"))
	if h.Sum32() != 0xE3069283 {
		t.Fatalf("streaming CRC32C = %#x", h.Sum32())
	}
}
