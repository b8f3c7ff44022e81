package queryeval_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/bench/tsbs"
	"github.com/aerie-db/aerie/bench/workload"
	"github.com/aerie-db/aerie/internal/queryeval"
	"github.com/aerie-db/aerie/internal/tsdb"
)

// cpuTime is this process' user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTSBS runs every TSBS pattern over 100 hosts × 12 h of TSBS
// data in Aerie's blocks through Prometheus' engine and through
// queryeval's, and reports each query's CPU time beside its wall time
// (the evaluator uses every core):
//
//	go test -run XXX -bench TSBS -benchtime 20x ./internal/queryeval/
func BenchmarkTSBS(b *testing.B) {
	w, err := workload.New("tsbs", workload.Spec{Targets: 100, Duration: 12 * time.Hour, Seed: 1})
	require.NoError(b, err)
	db, err := tsdb.Open(b.TempDir(), &tsdb.Options{FlushCheckInterval: -1, HotPartitions: -1})
	require.NoError(b, err)
	defer db.Close()
	for tg := range w.NumTargets() {
		ls := w.Series(tg)
		sc := w.Scraper(tg)
		var row workload.Row
		app := db.Appender(context.Background())
		for n := 0; sc.Next(&row); n++ {
			for i, v := range row.Values {
				if row.Present == nil || row.Present[i] {
					if _, err := app.Append(0, ls[i], row.T, v); err != nil {
						b.Fatal(err)
					}
				}
			}
			if n%256 == 255 {
				require.NoError(b, app.Commit())
				app = db.Appender(context.Background())
			}
		}
		require.NoError(b, app.Commit())
	}
	// Targets are loaded one after another, so all but the first went
	// through the backfill path: flush both, the queries read blocks.
	require.NoError(b, db.FlushHead())
	require.NoError(b, db.FlushBackfill())
	prof, err := tsbs.ProfileOf(w)
	require.NoError(b, err)
	hosts := tsbs.Hosts(w, prof)
	ng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1 << 40, Timeout: time.Hour, LookbackDelta: 5 * time.Minute, EnableDelayedNameRemoval: true})
	engines := []struct {
		name string
		eng  promql.QueryEngine
	}{
		{"prometheus", ng},
		{"aerie", queryeval.New(ng, queryeval.Options{DelayedNameRemoval: true})},
	}
	ctx := context.Background()
	for _, pt := range tsbs.Patterns(prof) {
		for _, e := range engines {
			b.Run(pt.Name+"/"+e.name, func(b *testing.B) {
				g := tsbs.Gen{Profile: prof, Dialect: tsbs.Prometheus, Hosts: hosts, MinT: w.MinTime(), MaxT: w.MaxTime(), Interval: 10 * time.Second}
				rnd := tsbs.Rand(1, pt.Name)
				c0 := cpuTime()
				for range b.N {
					q := g.Instance(pt, rnd)
					var pq promql.Query
					if q.Instant {
						pq, err = e.eng.NewInstantQuery(ctx, db, nil, q.Expr, time.UnixMilli(q.Start))
					} else {
						pq, err = e.eng.NewRangeQuery(ctx, db, nil, q.Expr, time.UnixMilli(q.Start), time.UnixMilli(q.End), q.Step)
					}
					require.NoError(b, err)
					res := pq.Exec(ctx)
					require.NoError(b, res.Err, q.Expr)
					pq.Close()
				}
				b.ReportMetric(float64(cpuTime()-c0)/float64(b.N)/1e6, "cpu-ms/op")
			})
		}
	}
}
