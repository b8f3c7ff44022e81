package index

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

var updateCorpus = flag.Bool("update", false, "rewrite the seed corpora under testdata/fuzz")

// fuzzNames and fuzzValues are small alphabets, so fuzz-derived series share
// pairs and matchers hit.
var (
	fuzzNames  = []string{"__name__", "a", "b", "c", "job", "x"}
	fuzzValues = []string{"", "1", "2", "10", "up", "api", "db", "x", "xy", "a.b"}
)

// seriesFromBytes derives label sets from data: each byte sets one label
// (name from the low bits, value from the high bits); 0xFF ends a series.
func seriesFromBytes(data []byte) []labels.Labels {
	var out []labels.Labels
	b := labels.NewBuilder(labels.EmptyLabels())
	for i, c := range data {
		if c != 0xFF {
			b.Set(fuzzNames[int(c)%len(fuzzNames)], fuzzValues[int(c)/len(fuzzNames)%len(fuzzValues)])
		}
		if c == 0xFF || i == len(data)-1 {
			out = append(out, b.Labels())
			b.Reset(labels.EmptyLabels())
		}
	}
	return out
}

// fuzzDict returns an in-memory dictionary holding the pairs of
// fixedSeries, so raw fuzz inputs can name known codes.
func fuzzDict() *TagDict {
	d := newTagDict("")
	for _, ls := range fixedSeries {
		canonicalLabels(ls).Range(func(l labels.Label) { d.Add(l.Name, l.Value) })
	}
	return d
}

// FuzzTagDictFile feeds arbitrary bytes to the tagdict replay that
// OpenTagDict runs over the file's contents. It stays in memory: opening a
// real file costs milliseconds here, which would starve the fuzzer; the file
// handling around replay is covered by the TestTagDict* tests.
func FuzzTagDictFile(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		const path = "fuzz/tagdict"
		d := newTagDict(path)
		valid, err := d.replay(data)
		if err != nil {
			var ce *CorruptionError
			if !errors.As(err, &ce) || ce.File != path {
				t.Fatalf("replay failed without a CorruptionError naming the file: %v", err)
			}
			return
		}
		if valid > len(data) {
			t.Fatalf("valid prefix %d longer than the input %d", valid, len(data))
		}
		n := d.Len()
		for c := uint32(0); c < uint32(n); c++ {
			name, value, ok := d.Pair(c)
			if got, ok2 := d.Code(name, value); !ok || !ok2 || got != c {
				t.Fatalf("code %d: Pair/Code disagree", c)
			}
		}

		// Appending to the repaired file works: a replay of the result gives
		// the old pairs plus the new one.
		d.Add("fuzz", "new")
		file := slices.Clone(data[:valid])
		file, _ = appendRecord(file, d.pairs, n, n+1)
		d2 := newTagDict(path)
		valid2, err := d2.replay(file)
		if err != nil || valid2 != len(file) {
			t.Fatalf("replay after append: valid %d of %d, %v", valid2, len(file), err)
		}
		if !slices.Equal(d2.pairs, d.pairs) {
			t.Fatal("replay after append changed the pairs")
		}
	})
}

func FuzzBlockIndex(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		// Arbitrary bytes: never panic; what decodes is canonical, so
		// rebuilding it from its labels gives the same bytes.
		dict := fuzzDict()
		if bi, err := DecodeBlockIndex(data, dict); err == nil {
			b := NewBlockIndexBuilder(dict)
			for i := 0; i < bi.NumSeries(); i++ {
				b.AddSeries(bi.Labels(uint32(i), nil))
			}
			if dict.Len() != len(fuzzDict().pairs) {
				t.Fatal("decoded labels added pairs to the dictionary")
			}
			if again := b.AppendTo(nil); !bytes.Equal(again, data) {
				t.Fatalf("decoded input is not canonical:\n in %x\nout %x", data, again)
			}
		} else if !errors.As(err, new(*CorruptionError)) {
			t.Fatalf("decode failed without a CorruptionError: %v", err)
		}

		// Round trip of fuzz-derived series, and determinism.
		series := seriesFromBytes(data)
		b := NewBlockIndexBuilder(dict)
		for _, ls := range series {
			b.AddSeries(ls)
		}
		enc := b.AppendTo(nil)
		if !bytes.Equal(enc, b.AppendTo(nil)) {
			t.Fatal("AppendTo twice gave different bytes")
		}
		b2 := NewBlockIndexBuilder(fuzzDict())
		for _, ls := range series {
			b2.AddSeries(ls)
		}
		if !bytes.Equal(enc, b2.AppendTo(nil)) {
			t.Fatal("same series over an equal dictionary gave different bytes")
		}
		decodeSeries(t, enc, dict, series)
	})
}

// matchersFromBytes derives up to three matchers from data, three bytes each.
func matchersFromBytes(data []byte) []*labels.Matcher {
	regexps := []string{"", ".*", ".+", "1|2", "|x", "x.*", "(?i)UP", "a\\.b", "a.b", "1.*|db", "[0-9]+"}
	var ms []*labels.Matcher
	for i := 0; i+2 < len(data) && len(ms) < 3; i += 3 {
		typ := labels.MatchType(data[i] % 4)
		name := fuzzNames[int(data[i+1])%len(fuzzNames)]
		if data[i+1] == 0xFE {
			name = ""
		}
		v := fuzzValues[int(data[i+2])%len(fuzzValues)]
		if typ == labels.MatchRegexp || typ == labels.MatchNotRegexp {
			v = regexps[int(data[i+2])%len(regexps)]
		}
		ms = append(ms, labels.MustNewMatcher(typ, name, v))
	}
	return ms
}

// naiveSelect is the definition Select must agree with: a missing label
// has the empty value.
func naiveSelect(series []labels.Labels, ms []*labels.Matcher) ([]string, error) {
	out := []string{}
	if len(ms) == 0 {
		return out, nil
	}
	if len(ms) == 1 && ms[0].Name == "" && ms[0].Value == "" {
		for _, ls := range series {
			out = append(out, canonicalLabels(ls).String())
		}
		slices.Sort(out)
		return out, nil
	}
	for _, ls := range series {
		ok := true
		for _, m := range ms {
			ok = ok && m.Matches(ls.Get(m.Name))
		}
		if ok {
			out = append(out, canonicalLabels(ls).String())
		}
	}
	slices.Sort(out)
	return out, nil
}

// FuzzSelect checks MemIndex and BlockIndex against naiveSelect. The first
// byte says how many bytes of series follow; the rest are matchers.
func FuzzSelect(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		n := min(int(data[0]), len(data)-1)
		series := dedupe(seriesFromBytes(data[1 : 1+n]))
		ms := matchersFromBytes(data[1+n:])
		hasEmpty := false
		for _, m := range ms {
			hasEmpty = hasEmpty || (m.Name == "" && m.Value == "")
		}
		want, _ := naiveSelect(series, ms)
		defer func(v uint64) { filterBelow = v }(filterBelow)
		for _, fb := range []uint64{0, math.MaxUint64} {
			filterBelow = fb
			for _, nr := range buildReaders(t, series) {
				got, err := Select(nr.r, slices.Clone(ms)...)
				if err != nil {
					if hasEmpty && len(ms) > 1 {
						continue // Prometheus refuses these too
					}
					t.Fatalf("%s %v: %v", nr.name, ms, err)
				}
				if hasEmpty && len(ms) > 1 {
					continue // an early empty result is allowed before the error
				}
				if g := labelStrings(got, nr.labels); !slices.Equal(g, want) {
					t.Fatalf("%s filterBelow=%d %v:\n got %v\nwant %v", nr.name, fb, ms, g, want)
				}
			}
		}
	})
}

func dedupe(series []labels.Labels) []labels.Labels {
	seen := map[string]bool{}
	var out []labels.Labels
	for _, ls := range series {
		k := canonicalLabels(ls).String()
		if !seen[k] {
			seen[k] = true
			out = append(out, ls)
		}
	}
	return out
}

// TestWriteFuzzCorpus rewrites testdata/fuzz with -update; without it,
// it checks the corpora exist.
func TestWriteFuzzCorpus(t *testing.T) {
	dict := fuzzDict()
	block := NewBlockIndexBuilder(dict)
	for _, ls := range fixedSeries {
		block.AddSeries(ls)
	}
	blockBytes := block.AppendTo(nil)

	dir := t.TempDir()
	d, err := OpenTagDict(filepath.Join(dir, "tagdict"))
	if err != nil {
		t.Fatal(err)
	}
	for i, ls := range fixedSeries {
		canonicalLabels(ls).Range(func(l labels.Label) { d.Add(l.Name, l.Value) })
		if i%3 == 2 {
			if err := d.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	dictBytes, err := os.ReadFile(filepath.Join(dir, "tagdict"))
	if err != nil {
		t.Fatal(err)
	}

	corpora := map[string]map[string][]byte{
		"FuzzTagDictFile": {
			"valid":       dictBytes,
			"torn":        dictBytes[:len(dictBytes)-3],
			"header_only": appendTagDictHeader(nil),
			"empty":       {},
			"zero_tail":   append(slices.Clone(dictBytes), make([]byte, 16)...),
		},
		"FuzzBlockIndex": {
			"fixed_series": blockBytes,
			"empty_block":  NewBlockIndexBuilder(fuzzDict()).AppendTo(nil),
			"derived":      {0, 1, 7, 13, 0xFF, 0, 2, 8, 0xFF, 3, 9, 21, 0xFF, 0, 1, 7},
		},
		"FuzzSelect": {
			"eq":       {12, 0, 6, 13, 0xFF, 0, 12, 0xFF, 1, 7, 19, 0xFF, 2, 0, 0, 4},
			"neg_only": {12, 0, 6, 13, 0xFF, 0, 12, 0xFF, 1, 7, 19, 0xFF, 2, 1, 1, 1, 3, 2, 4},
			"regex":    {8, 0, 6, 13, 0xFF, 0, 12, 7, 19, 2, 4, 3, 3, 1, 9},
			"all":      {4, 0, 6, 0xFF, 1, 0, 0xFE, 0},
		},
	}
	for target, files := range corpora {
		for name, data := range files {
			path := filepath.Join("testdata", "fuzz", target, name)
			content := fmt.Sprintf("go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(data)))
			if *updateCorpus {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != content {
				t.Errorf("%s is missing or stale; run go test -run TestWriteFuzzCorpus -update", path)
			}
		}
	}
}
