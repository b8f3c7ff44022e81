package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

func buildBlock(t testing.TB, dict *TagDict, series []labels.Labels) []byte {
	t.Helper()
	b := NewBlockIndexBuilder(dict)
	for _, ls := range series {
		b.AddSeries(ls)
	}
	if err := dict.Sync(); err != nil {
		t.Fatal(err)
	}
	return b.AppendTo(nil)
}

// decodeSeries decodes data and checks that it holds series, in order and
// with canonical labels.
func decodeSeries(t testing.TB, data []byte, dict *TagDict, series []labels.Labels) *BlockIndex {
	t.Helper()
	bi, err := DecodeBlockIndex(data, dict)
	if err != nil {
		t.Fatal(err)
	}
	if bi.NumSeries() != len(series) {
		t.Fatalf("NumSeries = %d, want %d", bi.NumSeries(), len(series))
	}
	var sb labels.ScratchBuilder
	for i, ls := range series {
		if got, want := bi.Labels(uint32(i), &sb), canonicalLabels(ls); !labels.Equal(got, want) {
			t.Fatalf("series %d: got %s, want %s", i, got, want)
		}
	}
	return bi
}

func TestBlockIndexRoundTrip(t *testing.T) {
	dict := openDict(t, filepath.Join(t.TempDir(), "tagdict"))
	defer dict.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	series := append(randomSeries(rng, 300), labels.EmptyLabels(), fixedSeries[6])
	data := buildBlock(t, dict, series)
	if again := buildBlock(t, dict, series); !bytes.Equal(data, again) {
		t.Fatal("AppendTo is not deterministic")
	}
	prefix := []byte("prefix")
	if got := NewBlockIndexBuilder(dict).AppendTo(slices.Clone(prefix)); !bytes.HasPrefix(got, prefix) {
		t.Fatal("AppendTo lost dst")
	}

	bi := decodeSeries(t, data, dict, series)
	if got := bi.Labels(uint32(len(series)), nil); !got.IsEmpty() {
		t.Fatalf("out-of-range id gave %s", got)
	}

	// Local codes: most used first, ties by global code.
	for i := 1; i < len(bi.global); i++ {
		a, b := bi.postings[i-1].GetCardinality(), bi.postings[i].GetCardinality()
		if a < b || a == b && bi.global[i-1] >= bi.global[i] {
			t.Fatalf("tag array out of order at %d", i)
		}
	}
	// Postings are the transpose of the rows.
	for i, ls := range series {
		canonicalLabels(ls).Range(func(l labels.Label) {
			if !bi.Postings(l.Name, l.Value).Contains(uint32(i)) {
				t.Fatalf("series %d missing from postings of %s", i, l)
			}
		})
	}
	// The caller owns what Postings returns.
	p := bi.Postings("__name__", "x")
	p.Clear()
	if bi.Postings("__name__", "x").IsEmpty() {
		t.Fatal("clearing a returned bitmap changed the index")
	}
}

func TestBlockIndexEmpty(t *testing.T) {
	dict := openDict(t, filepath.Join(t.TempDir(), "tagdict"))
	defer dict.Close()
	bi, err := DecodeBlockIndex(buildBlock(t, dict, nil), dict)
	if err != nil {
		t.Fatal(err)
	}
	if bi.NumSeries() != 0 || len(bi.LabelNames(nil)) != 0 || !bi.AllPostings().IsEmpty() {
		t.Fatal("empty block is not empty")
	}
}

// sectionOf names the section that holds byte i of a serialized index.
func sectionOf(data []byte, i int) (name string, start, end int) {
	if i < blockIndexHeaderSize {
		return "header", 0, blockIndexHeaderSize
	}
	off := blockIndexHeaderSize
	for _, id := range []SectionID{SectionTagArray, SectionTTMapping} {
		n := int(data[off+1])<<24 | int(data[off+2])<<16 | int(data[off+3])<<8 | int(data[off+4])
		end := off + sectionHeaderSize + n + sectionTrailerSize
		if i < end {
			return id.String(), off, end
		}
		off = end
	}
	panic("byte past the end")
}

func TestBlockIndexByteFlips(t *testing.T) {
	dict := openDict(t, filepath.Join(t.TempDir(), "tagdict"))
	defer dict.Close()
	data := buildBlock(t, dict, fixedSeries)
	for i := range data {
		for _, mask := range []byte{0x01, 0x80, 0xFF} {
			bad := slices.Clone(data)
			bad[i] ^= mask
			_, err := DecodeBlockIndex(bad, dict)
			var ce *CorruptionError
			if !errors.As(err, &ce) {
				t.Fatalf("flip %#x at %d: got %v, want a CorruptionError", mask, i, err)
			}
			name, start, end := sectionOf(data, i)
			if ce.Section != name || ce.Offset < int64(start) || ce.Offset >= int64(end) {
				t.Fatalf("flip %#x at %d: %v; want section %q within [%d, %d)", mask, i, err, name, start, end)
			}
		}
	}
	// Truncation and trailing garbage.
	for n := 0; n < len(data); n++ {
		if _, err := DecodeBlockIndex(data[:n], dict); err == nil {
			t.Fatalf("decoding %d of %d bytes succeeded", n, len(data))
		}
	}
	var ce *CorruptionError
	if _, err := DecodeBlockIndex(append(slices.Clone(data), 0), dict); !errors.As(err, &ce) || ce.Offset != int64(len(data)) {
		t.Fatalf("trailing byte: %v", err)
	}
}

func TestBlockIndexUnknownCode(t *testing.T) {
	dir := t.TempDir()
	big := openDict(t, filepath.Join(dir, "big"))
	defer big.Close()
	small := openDict(t, filepath.Join(dir, "small"))
	defer small.Close()
	small.Add("__name__", "up")
	data := buildBlock(t, big, fixedSeries)
	_, err := DecodeBlockIndex(data, small)
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Section != "tag array" {
		t.Fatalf("got %v, want a tag array CorruptionError", err)
	}
}

// TestBlockIndexRejectsNonCanonical hand-builds sections the encoder never
// writes, with valid checksums.
func TestBlockIndexRejectsNonCanonical(t *testing.T) {
	dict := openDict(t, filepath.Join(t.TempDir(), "tagdict"))
	defer dict.Close()
	a1, a2, b1, empty := dict.Add("a", "1"), dict.Add("a", "2"), dict.Add("b", "1"), dict.Add("e", "")
	block := func(tags []uint32, rows ...[]uint32) []byte {
		dst := append(binary.BigEndian.AppendUint32(nil, BlockIndexMagic), BlockIndexVersion)
		s := beginSection(&dst, SectionTagArray)
		dst = binary.AppendUvarint(dst, uint64(len(tags)))
		for _, c := range tags {
			dst = binary.AppendUvarint(dst, uint64(c))
		}
		dst = endSection(dst, s)
		s = beginSection(&dst, SectionTTMapping)
		dst = binary.AppendUvarint(dst, uint64(len(rows)))
		for _, r := range rows {
			dst = binary.AppendUvarint(dst, uint64(len(r)))
		}
		for _, r := range rows {
			for j, c := range r {
				if j > 0 {
					c -= r[j-1] + 1
				}
				dst = binary.AppendUvarint(dst, uint64(c))
			}
		}
		return endSection(dst, s)
	}
	if _, err := DecodeBlockIndex(block([]uint32{a1, b1}, []uint32{0, 1}, []uint32{0}), dict); err != nil {
		t.Fatalf("valid block: %v", err)
	}
	for name, data := range map[string][]byte{
		"same name twice":  block([]uint32{a1, a2}, []uint32{0, 1}),
		"unused tag":       block([]uint32{a1, b1}, []uint32{0}),
		"count order":      block([]uint32{b1, a1}, []uint32{1}, []uint32{0, 1}),
		"tie order":        block([]uint32{b1, a1}, []uint32{0, 1}),
		"repeated tag":     block([]uint32{a1, a1}, []uint32{0}, []uint32{1}),
		"empty value":      block([]uint32{empty}, []uint32{0}),
		"tag out of range": block([]uint32{a1}, []uint32{0, 1}),
	} {
		var ce *CorruptionError
		if _, err := DecodeBlockIndex(data, dict); !errors.As(err, &ce) {
			t.Errorf("%s: got %v, want a CorruptionError", name, err)
		}
	}
}

func TestBlockIndexLabelNamesPaths(t *testing.T) {
	// Both strategies of LabelNames (rows for few ids, postings for many)
	// agree with the labels of the chosen series.
	dict := openDict(t, filepath.Join(t.TempDir(), "tagdict"))
	defer dict.Close()
	rng := rand.New(rand.NewPCG(5, 6))
	series := randomSeries(rng, 200)
	bi, err := DecodeBlockIndex(buildBlock(t, dict, series), dict)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{1, 2, 5, 50, 200} {
		ids := bi.AllPostings()
		for int(ids.GetCardinality()) > k {
			ids.Remove(uint32(rng.IntN(len(series))))
		}
		seen := map[string]bool{}
		it := ids.Iterator()
		for it.HasNext() {
			canonicalLabels(series[it.Next()]).Range(func(l labels.Label) { seen[l.Name] = true })
		}
		var want []string
		for n := range seen {
			want = append(want, n)
		}
		slices.Sort(want)
		if got := bi.LabelNames(ids); !slices.Equal(got, want) {
			t.Fatalf("%d ids: got %q, want %q", k, got, want)
		}
	}
}
