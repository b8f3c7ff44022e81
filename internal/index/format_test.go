package index

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aerie-db/aerie/internal/formatdoc"
	"github.com/prometheus/prometheus/model/labels"
)

// TestFormatDoc checks the constant tables of docs/format/tagdict.md and
// ttmapping.md against the code: together they list exactly the package's
// exported constants, with their values.
func TestFormatDoc(t *testing.T) {
	specs := map[string]uint32{ // spec → the magic its diagram shows
		"../../docs/format/tagdict.md":   TagDictMagic,
		"../../docs/format/ttmapping.md": BlockIndexMagic,
	}
	want := formatdoc.Exported(t, ".")
	seen := map[string]bool{}
	for spec, magic := range specs {
		for k, v := range formatdoc.Table(t, spec) {
			if w, ok := want[k]; !ok {
				t.Errorf("%s: table lists %s, which the code does not export", spec, k)
			} else if v != w {
				t.Errorf("%s: constant %s is %s in the table, %s in code", spec, k, v, w)
			}
			seen[k] = true
		}
		text, err := os.ReadFile(spec)
		if err != nil {
			t.Fatal(err)
		}
		if d := fmt.Sprintf("magic(0x%08X)", magic); !strings.Contains(string(text), d) {
			t.Errorf("%s: diagram does not show %s", spec, d)
		}
	}
	for k, v := range want {
		if !seen[k] {
			t.Errorf("constant %s = %s is in no spec", k, v)
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
