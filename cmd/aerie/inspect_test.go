package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/compact"
	"github.com/aerie-db/aerie/internal/index"
)

// TestInspectLineage compacts the demo's blocks into one, as the engine
// would, and checks inspect shows its level, seq, backfill generation and
// parents.
func TestInspectLineage(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := runDemo(&out, dir, 2, 3); err != nil {
		t.Fatal(err)
	}
	dict, err := index.OpenTagDict(filepath.Join(dir, "tagdict"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := filepath.Join(dir, "blocks")
	ents, err := os.ReadDir(blocks)
	if err != nil {
		t.Fatal(err)
	}
	var inputs []*block.Reader
	for _, e := range ents {
		r, err := block.Open(filepath.Join(blocks, e.Name()), dict, block.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, r)
	}
	if len(inputs) < 2 {
		t.Fatalf("demo wrote %d blocks, want at least 2", len(inputs))
	}
	_, meta, err := compact.Merge(blocks, inputs, dict, compact.Options{
		Level: 1, DropBefore: math.MinInt64,
		GroupKey: func(l labels.Labels) string { return l.Get("instance") },
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range inputs {
		r.Close()
		if err := os.RemoveAll(r.Dir()); err != nil {
			t.Fatal(err)
		}
	}
	dict.Close()

	out.Reset()
	if err := runInspect(&out, dir); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	for _, col := range []string{"LEVEL", "SEQ", "BACKFILL", "PARENTS"} {
		if !strings.Contains(lines[0], col) {
			t.Fatalf("inspect header lacks %s:\n%s", col, out.String())
		}
	}
	if len(lines) < 2 || !strings.HasPrefix(lines[1], meta.ULID) {
		t.Fatalf("inspect does not list the compacted block %s:\n%s", meta.ULID, out.String())
	}
	fields := strings.Fields(lines[1])
	if level, seq, backfill := fields[3], fields[4], fields[5]; level != "1" || seq != "0" || backfill != "0" {
		t.Fatalf("level, seq, backfill = %s, %s, %s; want 1, 0, 0:\n%s", level, seq, backfill, out.String())
	}
	parents := strings.Split(fields[len(fields)-1], ",")
	if len(parents) != len(inputs) {
		t.Fatalf("parents %v, want %d:\n%s", parents, len(inputs), out.String())
	}
	for i, p := range meta.Compaction.Parents {
		if len(parents[i]) != 8 || !strings.HasSuffix(p, parents[i]) {
			t.Fatalf("parent %d shown as %q, ULID %s", i, parents[i], p)
		}
	}
}

// TestInspectParts checks inspect --parts lists every block and a total
// whose parts add up to its bytes a sample.
func TestInspectParts(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := runDemo(&out, dir, 2, 3); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runInspectParts(&out, dir); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 3 || !strings.Contains(lines[0], "TIMESTAMPS") {
		t.Fatalf("inspect --parts:\n%s", out.String())
	}
	total := strings.Fields(lines[len(lines)-1])
	if total[0] != "all" || total[1] != "blocks" {
		t.Fatalf("no total row:\n%s", out.String())
	}
	var parts float64
	for _, f := range total[4:9] { // timestamps … index other
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatal(err)
		}
		parts += v
	}
	whole, err := strconv.ParseFloat(total[3], 64)
	if err != nil {
		t.Fatal(err)
	}
	if whole <= 0 || math.Abs(parts-whole) > 0.0006 {
		t.Fatalf("parts add up to %.4f B a sample, the blocks take %.4f:\n%s", parts, whole, out.String())
	}
}
