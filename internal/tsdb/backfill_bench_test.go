package tsdb

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/wal"
)

// BenchmarkBackfill writes history through the storage appender, host
// after host, each host's range in time order, 10,000 samples per commit
// (what importers do), and flushes the generations; it reports samples/s
// including the flush.
//
//	go test -run '^$' -bench BenchmarkBackfill -count 6 ./internal/tsdb/ | benchstat -
func BenchmarkBackfill(b *testing.B) {
	for _, series := range []int{100, 500} {
		b.Run(fmt.Sprintf("series=%d", series), func(b *testing.B) {
			const hosts, step = 4, int64(15_000)
			span := 2 * day
			lsets := make([][]labels.Labels, hosts)
			for h := range lsets {
				for s := 0; s < series; s++ {
					lsets[h] = append(lsets[h], labels.FromStrings("__name__", fmt.Sprintf("m%d", s%50), "instance", fmt.Sprint(h), "job", "node", "x", fmt.Sprint(s/50)))
				}
			}
			b.ReportAllocs()
			var total int
			var elapsed time.Duration
			for b.Loop() {
				db, err := Open(b.TempDir(), &Options{FlushCheckInterval: -1, BackfillIdle: time.Hour, WALSync: wal.SyncInterval})
				require.NoError(b, err)
				app := db.Appender(context.Background())
				now := 100 * day
				for h := range lsets {
					for _, l := range lsets[h] {
						_, err := app.Append(0, l, now, 1)
						require.NoError(b, err)
					}
				}
				require.NoError(b, app.Commit())
				start := time.Now()
				n := 0
				for h := range lsets {
					for ts := now - span; ts < now-2*hour; ts += step {
						for _, l := range lsets[h] {
							if _, err := app.Append(0, l, ts, float64(ts/step)); err != nil {
								b.Fatal(err)
							}
							n++
						}
						if n%10_000 < series {
							require.NoError(b, app.Commit())
						}
					}
				}
				require.NoError(b, app.Commit())
				require.NoError(b, db.FlushBackfill())
				elapsed += time.Since(start)
				total += n
				require.NoError(b, db.Close())
			}
			b.ReportMetric(float64(total)/elapsed.Seconds(), "samples/s")
		})
	}
}
