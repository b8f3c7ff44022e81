package zstdx

import (
	"bytes"
	"errors"
	"testing"
)

func TestDecode(t *testing.T) {
	src := bytes.Repeat([]byte("aerie block metrics "), 1000)
	for name, enc := range map[string]func(dst, src []byte) []byte{"fastest": AppendFastest, "default": AppendDefault} {
		z := enc(nil, src)
		if len(z) >= len(src) {
			t.Fatalf("%s: %d bytes compressed to %d", name, len(src), len(z))
		}
		out, _, err := Decode(nil, z, uint64(len(src)))
		if err != nil || !bytes.Equal(out, src) {
			t.Fatalf("%s: round trip: %v", name, err)
		}
		for _, size := range []uint64{0, uint64(len(src)) - 1, uint64(len(src)) + 1, MaxRatio*uint64(len(z)) + 1, MaxSize + 1} {
			if _, _, err := Decode(nil, z, size); !errors.Is(err, ErrSize) {
				t.Errorf("%s: size %d: %v, want ErrSize", name, size, err)
			}
		}
		if _, _, err := Decode(nil, z[:len(z)/2], uint64(len(src))); err == nil {
			t.Errorf("%s: a truncated frame decoded", name)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(AppendDefault(nil, []byte("seed seed seed seed")), uint32(19))
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd}, uint32(1<<20))
	f.Fuzz(func(t *testing.T, src []byte, size uint32) {
		out, _, err := Decode(nil, src, uint64(size))
		if err == nil && uint64(len(out)) != uint64(size) {
			t.Fatalf("%d bytes for a declared %d", len(out), size)
		}
	})
}
