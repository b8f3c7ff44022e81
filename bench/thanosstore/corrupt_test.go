package thanosstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/index"
)

// oneSeries selects cpu_usage{instance="host-5",cpu="2"}.
var oneSeries = []*labels.Matcher{eq("__name__", "cpu_usage"), eq("instance", "host-5"), eq("cpu", "2")}

// put replaces object name in bkt with data.
func put(t *testing.T, bkt *countingBucket, name string, data []byte) {
	t.Helper()
	if err := bkt.Upload(context.Background(), name, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantCorruption fails t unless err is a *CorruptionError for object at
// offset off (any offset when off < 0) whose message names the object.
func wantCorruption(t *testing.T, err error, object string, off int64) {
	t.Helper()
	var ce *CorruptionError
	switch {
	case err == nil:
		t.Fatalf("no error, want corruption of %s", object)
	case !errors.As(err, &ce):
		t.Fatalf("error %v is not a *CorruptionError", err)
	case ce.Object != object || (off >= 0 && ce.Offset != off):
		t.Fatalf("corruption of %s at %d, want %s at %d: %v", ce.Object, ce.Offset, object, off, err)
	case !strings.Contains(err.Error(), object):
		t.Fatalf("error %q does not name %s", err, object)
	}
}

func TestSelectTruncatedObjects(t *testing.T) {
	f := floatBlock(t)
	idx := readFile(t, filepath.Join(f.dir, "index"))
	seg := readFile(t, filepath.Join(f.dir, "chunks", "000001"))
	toc, err := index.NewTOCFromByteSlice(byteSlice(idx))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		object string // under the block's prefix
		data   []byte
	}{
		{"chunks at half", "chunks/000001", seg[:len(seg)/2]},
		{"chunks inside the first chunk", "chunks/000001", seg[:chunks.SegmentHeaderSize+3]},
		{"chunks without the last CRC byte", "chunks/000001", seg[:len(seg)-1]},
		{"index inside the series", "index", idx[:toc.Series+100]},
		{"index inside the postings", "index", idx[:toc.Postings+10]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, bkt, _ := open(t, f)
			name := path.Join("blocks", f.id, tt.object)
			put(t, bkt, name, tt.data)
			_, err := b.Select(context.Background(), math.MinInt64, math.MaxInt64, neq("job", ""))
			wantCorruption(t, err, name, -1)
		})
	}
}

// locate finds, with prometheus/tsdb's own index reader, the series entry
// of oneSeries and its first chunk: their offsets and record lengths, and
// the postings lists oneSeries reads.
func locate(t *testing.T, dir string, idx, seg []byte) (series, chunk [2]int64, postings [][2]int64) {
	t.Helper()
	ctx := context.Background()
	ir, err := index.NewFileReader(filepath.Join(dir, "index"), index.DecodePostingsRaw)
	if err != nil {
		t.Fatal(err)
	}
	defer ir.Close()
	var ps []index.Postings
	ranges, err := ir.PostingsRanges()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range oneSeries {
		p, err := ir.Postings(ctx, m.Name, m.Value)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
		r := ranges[labels.Label{Name: m.Name, Value: m.Value}]
		// Range.Start is past the 4-byte length; the record is length, list, CRC.
		start := r.Start - 4
		postings = append(postings, [2]int64{start, start + 8 + int64(binary.BigEndian.Uint32(idx[start:]))})
	}
	refs, err := index.ExpandPostings(index.Intersect(ps...))
	if err != nil || len(refs) != 1 {
		t.Fatalf("postings %v, %v; want one series", refs, err)
	}
	var sb labels.ScratchBuilder
	var chks []chunks.Meta
	if err := ir.Series(refs[0], &sb, &chks); err != nil {
		t.Fatal(err)
	}
	record := func(b []byte, off int64, extra int) [2]int64 {
		l, n := binary.Uvarint(b[off:])
		return [2]int64{off, off + int64(n+extra) + int64(l) + 4}
	}
	_, coff := chunks.BlockChunkRef(chks[0].Ref).Unpack()
	return record(idx, int64(refs[0])*16, 0), record(seg, int64(coff), 1), postings
}

// Every byte of a record Select reads is covered by a checksum or a length
// check: flipping any one of them is a corruption error at that record.
func TestSelectByteFlipsInRecordsRead(t *testing.T) {
	f := floatBlock(t)
	idx := readFile(t, filepath.Join(f.dir, "index"))
	seg := readFile(t, filepath.Join(f.dir, "chunks", "000001"))
	series, chunk, postings := locate(t, f.dir, idx, seg)
	type test struct {
		name   string
		object string
		rec    [2]int64
	}
	tests := []test{
		{"series entry", "index", series},
		{"first chunk", "chunks/000001", chunk},
	}
	for i, p := range postings {
		tests = append(tests, test{"postings of " + oneSeries[i].String(), "index", p})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, bkt, _ := open(t, f)
			name := path.Join("blocks", f.id, tt.object)
			bkt.flipObject = name
			for bkt.flipAt = tt.rec[0]; bkt.flipAt < tt.rec[1]; bkt.flipAt++ {
				_, err := b.Select(context.Background(), math.MinInt64, math.MaxInt64, oneSeries...)
				wantCorruption(t, err, name, tt.rec[0])
			}
		})
	}
}

// A byte flipped anywhere in the index (after OpenBlock) or the chunks gives
// the right answer, where Select does not read that byte, or an error:
// never a wrong answer and never a panic.
func TestSelectByteFlipsNeverWrong(t *testing.T) {
	f := floatBlock(t)
	ms := []*labels.Matcher{eq("job", "db")}
	want := querierSelect(t, f.dir, math.MinInt64, math.MaxInt64, ms...)
	for _, object := range []string{"index", "chunks/000001"} {
		t.Run(object, func(t *testing.T) {
			size := fileSize(t, filepath.Join(f.dir, filepath.FromSlash(object)))
			b, bkt, _ := open(t, f)
			name := path.Join("blocks", f.id, object)
			bkt.flipObject = name
			var errs int
			for bkt.flipAt = 5; bkt.flipAt < size; bkt.flipAt += size/61 + 1 {
				got, err := b.Select(context.Background(), math.MinInt64, math.MaxInt64, ms...)
				if err != nil {
					wantCorruption(t, err, name, -1)
					errs++
					continue
				}
				if d := diffSeries(got, want); d != "" {
					t.Fatalf("flip at %d: wrong answer without error: %s", bkt.flipAt, d)
				}
			}
			if errs == 0 {
				t.Error("no flip was detected; the stride misses everything Select reads")
			}
		})
	}
}

func TestOpenBlockErrors(t *testing.T) {
	f := floatBlock(t)
	idx := readFile(t, filepath.Join(f.dir, "index"))
	toc, err := index.NewTOCFromByteSlice(byteSlice(idx))
	if err != nil {
		t.Fatal(err)
	}
	flip := func(off uint64) []byte {
		b := slices.Clone(idx)
		b[off] ^= 0xff
		return b
	}
	v1 := slices.Clone(idx)
	v1[4] = index.FormatV1
	tests := []struct {
		name    string
		object  string
		data    []byte // nil deletes the object
		want    string
		corrupt bool
	}{
		{"no meta.json", "meta.json", nil, "meta.json", false},
		{"meta.json of another block", "meta.json", bytes.Replace(readFile(t, filepath.Join(f.dir, "meta.json")), []byte(f.id), []byte("01ARZ3NDEKTSV4RRFFQ69G5FAV"), 1), "names block", false},
		{"no chunks", "chunks/000001", nil, "no chunk segments", false},
		{"index too short", "index", idx[:10], "too short", true},
		{"index magic", "index", flip(0), "magic", true},
		{"index format v1", "index", v1, "v1", true},
		{"TOC checksum", "index", flip(uint64(len(idx)) - 10), "TOC", true},
		{"symbols checksum", "index", flip(toc.Symbols + 9), "symbol table", true},
		{"postings offset table checksum", "index", flip(toc.PostingsTable + 9), "postings offset table", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, bkt, _ := open(t, f)
			name := path.Join("blocks", f.id, tt.object)
			if tt.data == nil {
				if err := bkt.Delete(context.Background(), name); err != nil {
					t.Fatal(err)
				}
			} else {
				put(t, bkt, name, tt.data)
			}
			_, err := OpenBlock(context.Background(), bkt, "blocks", f.id, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if tt.corrupt {
				wantCorruption(t, err, name, -1)
			}
		})
	}
}
