package index

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

// TestFormatDocsConstants checks the constant tables of docs/format against
// the code, so the specs cannot drift.
func TestFormatDocsConstants(t *testing.T) {
	docs := map[string]map[string]uint64{
		"tagdict.md": {
			"TagDictMagic":   uint64(TagDictMagic),
			"TagDictVersion": uint64(TagDictVersion),
		},
		"ttmapping.md": {
			"BlockIndexMagic":   uint64(BlockIndexMagic),
			"BlockIndexVersion": uint64(BlockIndexVersion),
			"SectionTagArray":   uint64(SectionTagArray),
			"SectionTTMapping":  uint64(SectionTTMapping),
		},
	}
	row := regexp.MustCompile("(?m)^\\| `(\\w+)` \\| `([^`]+)` \\|$")
	for file, want := range docs {
		text, err := os.ReadFile(filepath.Join("..", "..", "docs", "format", file))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]uint64{}
		for _, m := range row.FindAllStringSubmatch(string(text), -1) {
			v, err := strconv.ParseUint(m[2], 0, 64)
			if err != nil {
				t.Fatalf("%s: constant %s has value %q: %v", file, m[1], m[2], err)
			}
			got[m[1]] = v
		}
		for name, v := range want {
			if g, ok := got[name]; !ok || g != v {
				t.Errorf("%s: %s is %#x in the code, %#x (present: %v) in the doc", file, name, v, g, ok)
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("%s names constant %s, which the code does not have", file, name)
			}
		}
		for name, v := range want {
			if strings.HasSuffix(name, "Magic") && !bytes.Contains(text, fmt.Appendf(nil, "magic(0x%08X)", v)) {
				t.Errorf("%s: diagram does not show magic(0x%08X)", file, v)
			}
		}
	}
}

// TestFormatFixtures reads files written by format version 1. Keep them: a
// new version adds fixtures, it never rewrites these (except with -update
// while version 1 is still unreleased).
func TestFormatFixtures(t *testing.T) {
	dictFixture := filepath.Join("testdata", "tagdict_v1")
	blockFixture := filepath.Join("testdata", "blockindex_v1")
	if *updateCorpus {
		dir := t.TempDir()
		d := openDict(t, filepath.Join(dir, "tagdict"))
		b := NewBlockIndexBuilder(d)
		for i, ls := range fixedSeries {
			b.AddSeries(ls)
			if i == 4 {
				if err := d.Sync(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, "tagdict"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dictFixture, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(blockFixture, b.AppendTo(nil), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	data, err := os.ReadFile(dictFixture)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tagdict")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	d := openDict(t, path)
	defer d.Close()
	if d.Len() != 10 {
		t.Fatalf("fixture has %d pairs, want 10", d.Len())
	}
	block, err := os.ReadFile(blockFixture)
	if err != nil {
		t.Fatal(err)
	}
	bi, err := DecodeBlockIndex(block, d)
	if err != nil {
		t.Fatal(err)
	}
	for i, ls := range fixedSeries {
		if got := bi.Labels(uint32(i), nil); !labels.Equal(got, canonicalLabels(ls)) {
			t.Fatalf("series %d: %s, want %s", i, got, ls)
		}
	}
	// The encoder still writes these bytes.
	b := NewBlockIndexBuilder(d)
	for _, ls := range fixedSeries {
		b.AddSeries(ls)
	}
	if !bytes.Equal(b.AppendTo(nil), block) {
		t.Fatal("encoder output differs from the version 1 fixture")
	}
}

// TestOpenTagDictCorpus opens the FuzzTagDictFile seeds as real files, the
// step the fuzz target does in memory.
func TestOpenTagDictCorpus(t *testing.T) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzTagDictFile", "*"))
	if err != nil || len(seeds) == 0 {
		t.Fatalf("no seeds: %v", err)
	}
	for _, seed := range seeds {
		text, err := os.ReadFile(seed)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(text), "\n")
		q := strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")")
		data, err := strconv.Unquote(q)
		if err != nil {
			t.Fatalf("%s: %v", seed, err)
		}
		path := filepath.Join(t.TempDir(), "tagdict")
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if d, err := OpenTagDict(path); err == nil {
			d.Close()
		}
	}
}
