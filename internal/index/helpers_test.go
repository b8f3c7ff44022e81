package index

import (
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/prometheus/prometheus/model/labels"
)

// namedReader is one index under test with a way back from ids to labels.
type namedReader struct {
	name   string
	r      Reader
	labels func(id uint32) labels.Labels
}

// buildReaders indexes series in a MemIndex (refs spread out, so ids differ
// from positions) and in a round-tripped BlockIndex.
func buildReaders(t testing.TB, series []labels.Labels) []namedReader {
	t.Helper()
	dict := newTagDict("") // in memory: matching needs no file
	mem := NewMemIndex()
	b := NewBlockIndexBuilder(dict)
	for i, ls := range series {
		mem.Add(uint32(3*i+7), ls)
		if id := b.AddSeries(ls); id != uint32(i) {
			t.Fatalf("AddSeries returned %d, want %d", id, i)
		}
	}
	bi, err := DecodeBlockIndex(b.AppendTo(nil), dict)
	if err != nil {
		t.Fatal(err)
	}
	return []namedReader{
		{"mem", mem, func(id uint32) labels.Labels { ls, _ := mem.Labels(id); return ls }},
		{"block", bi, func(id uint32) labels.Labels { return bi.Labels(id, nil) }},
	}
}

// labelStrings turns a selection into sorted label-set strings.
func labelStrings(ids *roaring.Bitmap, lbl func(uint32) labels.Labels) []string {
	out := []string{}
	it := ids.Iterator()
	for it.HasNext() {
		out = append(out, lbl(it.Next()).String())
	}
	slices.Sort(out)
	return out
}

func mustMatcher(t testing.TB, typ labels.MatchType, name, value string) *labels.Matcher {
	t.Helper()
	m, err := labels.NewMatcher(typ, name, value)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
