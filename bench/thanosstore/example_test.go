package thanosstore_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/thanos-io/objstore"

	"github.com/aerie-db/aerie/bench/thanosstore"
)

func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "thanosstore-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	// A prometheus/tsdb block of one series, 10 samples at 15 s.
	w, err := tsdb.NewBlockWriter(slog.New(slog.DiscardHandler), dir, 2*3600*1000)
	if err != nil {
		panic(err)
	}
	app := w.Appender(ctx)
	for i := range int64(10) {
		if _, err := app.Append(0, labels.FromStrings("__name__", "up", "job", "api"), 1000+i*15000, float64(i)); err != nil {
			panic(err)
		}
	}
	if err := app.Commit(); err != nil {
		panic(err)
	}
	id, err := w.Flush(ctx)
	if err != nil {
		panic(err)
	}
	w.Close()

	bkt := objstore.NewInMemBucket()
	if err := thanosstore.Upload(ctx, bkt, "blocks", filepath.Join(dir, id.String())); err != nil {
		panic(err)
	}
	var stats thanosstore.Stats
	b, err := thanosstore.OpenBlock(ctx, bkt, "blocks", id.String(), &stats)
	if err != nil {
		panic(err)
	}
	series, err := b.Select(ctx, 30000, 60000, labels.MustNewMatcher(labels.MatchEqual, "job", "api"))
	if err != nil {
		panic(err)
	}
	for _, s := range series {
		fmt.Println(s.Labels, s.T, s.V)
	}
	fmt.Println("round trips:", stats.RoundTrips.Load(), "GETs:", stats.Gets.Load())
	// Output:
	// {__name__="up", job="api"} [31000 46000] [2 3]
	// round trips: 3 GETs: 3
}
