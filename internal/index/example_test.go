package index_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aerie-db/aerie/internal/index"
	"github.com/prometheus/prometheus/model/labels"
)

func Example() {
	dir, _ := os.MkdirTemp("", "aerie-index")
	defer os.RemoveAll(dir)
	dict, err := index.OpenTagDict(filepath.Join(dir, "tagdict"))
	if err != nil {
		panic(err)
	}
	defer dict.Close()

	// The block writer adds the series of a block in order...
	b := index.NewBlockIndexBuilder(dict)
	b.AddSeries(labels.FromStrings("__name__", "cpu", "node", "node01", "cpu", "core1"))
	b.AddSeries(labels.FromStrings("__name__", "cpu", "node", "node01", "cpu", "core2"))
	b.AddSeries(labels.FromStrings("__name__", "cpu", "node", "node02", "cpu", "core1"))
	// ...makes the new codes durable, then writes the block.
	if err := dict.Sync(); err != nil {
		panic(err)
	}
	data := b.AppendTo(nil)

	bi, err := index.DecodeBlockIndex(data, dict)
	if err != nil {
		panic(err)
	}
	ids, err := index.Select(bi,
		labels.MustNewMatcher(labels.MatchEqual, "__name__", "cpu"),
		labels.MustNewMatcher(labels.MatchNotEqual, "node", "node02"))
	if err != nil {
		panic(err)
	}
	for _, id := range ids.ToArray() {
		fmt.Println(id, bi.Labels(id, nil))
	}
	values, _ := index.LabelValues(bi, "cpu", labels.MustNewMatcher(labels.MatchEqual, "node", "node02"))
	fmt.Println(values)
	// Output:
	// 0 {__name__="cpu", cpu="core1", node="node01"}
	// 1 {__name__="cpu", cpu="core2", node="node01"}
	// [core1]
}
