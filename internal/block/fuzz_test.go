package block

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aerie-db/aerie/internal/index"
)

// FuzzIndexFile feeds arbitrary bytes to the block index decoder: it must
// return an error or a consistent index, never panic.
func FuzzIndexFile(f *testing.F) {
	bdir, _ := testBlock(f, 2, 3, 30)
	good, err := os.ReadFile(filepath.Join(bdir, IndexFilename))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{})
	for _, v := range []string{"v1", "v2", "v3", "v4"} { // every index version
		b, err := os.ReadFile(filepath.Join("testdata", "index_format_"+v, "block", IndexFilename))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	dict, err := index.OpenTagDict(filepath.Join(f.TempDir(), "tagdict"))
	if err != nil {
		f.Fatal(err)
	}
	defer dict.Close()
	f.Fuzz(func(t *testing.T, b []byte) {
		meta := Meta{TupleSize: 8, BlockTuples: 10, MetricInterval: DefaultMetricInterval, MaxTime: 1}
		r := &Reader{meta: meta}
		if err := r.decodeIndex(b, dict, "index", false); err == nil {
			for id := range r.numSeries() {
				if _, err := r.Metrics(context.Background(), uint32(id)); err != nil {
					t.Fatalf("index decoded but metrics of series %d do not: %v", id, err)
				}
			}
		}
		// Cut as the bucket stores it, the section parsed apart.
		head, sec, err := SplitIndex(b)
		if err != nil {
			return
		}
		c := &Reader{meta: meta}
		if err := c.decodeIndex(head, dict, "index", true); err != nil {
			return
		}
		ms, err := c.ParseMetrics("metrics", sec)
		if err != nil {
			return
		}
		for id := range c.numSeries() {
			if _, err := ms.Append(nil, uint32(id)); err != nil {
				t.Fatalf("section parsed but metrics of series %d do not: %v", id, err)
			}
		}
	})
}

// FuzzMeta feeds arbitrary bytes to the meta.json decoder.
func FuzzMeta(f *testing.F) {
	m := Meta{Magic: MetaMagic, Version: MetaVersion, MinTime: 0, MaxTime: 10, TupleSize: 8, BlockTuples: 10, MetricInterval: 1}
	b, err := encodeMeta(&m)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m Meta
		if decodeMeta(b, &m) == nil {
			// A meta that decodes re-encodes to a meta that decodes.
			out, err := encodeMeta(&m)
			if err != nil {
				t.Fatal(err)
			}
			var m2 Meta
			if err := decodeMeta(out, &m2); err != nil {
				t.Fatalf("re-encoded meta does not decode: %v", err)
			}
		}
	})
}
