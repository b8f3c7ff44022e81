package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/spf13/cobra"

	"github.com/aerie-db/aerie/internal/tsdb"
)

func newDemoCmd() *cobra.Command {
	var dataDir string
	var targets int
	var hours int
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Load a node_exporter-like workload into the engine and query it with PromQL",
		Long: `demo opens the data directory (creating it), writes a synthetic
node_exporter workload if the directory holds no data yet, flushes it into
blocks, and evaluates a few PromQL expressions over it with Prometheus' own
engine. Run it twice: the second run replays the WAL and reads the blocks.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.OutOrStdout(), dataDir, targets, hours)
		},
	}
	cmd.Flags().StringVar(&dataDir, "data.dir", "./data", "data directory")
	cmd.Flags().IntVar(&targets, "targets", 10, "scrape targets to simulate")
	cmd.Flags().IntVar(&hours, "hours", 6, "hours of 15 s scrapes to write")
	return cmd
}

func runDemo(w io.Writer, dir string, targets, hours int) error {
	start := time.Now()
	db, err := tsdb.Open(dir, &tsdb.Options{FlushCheckInterval: -1})
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Fprintf(w, "opened %s in %v: %d blocks, %d head series\n", dir, time.Since(start).Round(time.Millisecond), len(db.Blocks()), db.Head().NumSeries())
	end := int64(0)
	if len(db.Blocks()) == 0 && db.Head().NumSeries() == 0 {
		end = time.Now().UnixMilli()
		n, err := writeDemo(db, targets, hours, end)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "wrote %d samples (%d targets, %d h at 15 s) in %v\n", n, targets, hours, time.Since(start).Round(time.Millisecond))
		if err := db.FlushHead(); err != nil {
			return err
		}
	} else {
		end = max(db.Head().MaxTime(), lastBlockMax(db))
	}
	var bytes, samples int64
	for _, b := range db.Blocks() {
		bytes += b.Stats.DataBytes + b.Stats.IndexBytes
		samples += int64(b.Stats.Samples)
	}
	if samples > 0 {
		fmt.Fprintf(w, "%d blocks, %d samples, %.3f bytes/sample on disk\n", len(db.Blocks()), samples, float64(bytes)/float64(samples))
	}
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 50_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	at := time.UnixMilli(end)
	for _, expr := range []string{
		`count(up)`,
		`sum by (instance) (rate(node_cpu_seconds_total{mode!="idle"}[5m]))`,
		`topk(3, node_load1)`,
		`histogram_quantile(0.9, sum by (le) (rate(http_request_duration_seconds_bucket[5m])))`,
	} {
		q, err := eng.NewInstantQuery(context.Background(), db, nil, expr, at)
		if err != nil {
			return err
		}
		res := q.Exec(context.Background())
		if res.Err != nil {
			return fmt.Errorf("%s: %w", expr, res.Err)
		}
		fmt.Fprintf(w, "\n> %s\n%s\n", expr, truncate(res.String(), 600))
		q.Close()
	}
	return nil
}

func lastBlockMax(db *tsdb.DB) int64 {
	bs := db.Blocks()
	if len(bs) == 0 {
		return math.MinInt64
	}
	return bs[len(bs)-1].Stats.MaxSampleTime
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + " …"
}

// writeDemo writes node_exporter-like scrapes ending at end.
func writeDemo(db *tsdb.DB, targets, hours int, end int64) (int, error) {
	rng := rand.New(rand.NewSource(1))
	const step = 15_000
	rows := hours * 3600_000 / step
	begin := end - int64(rows)*step
	type ser struct {
		l    labels.Labels
		v    float64
		rate float64
		kind int // 0 counter, 1 gauge, 2 constant, 3 up (1)
	}
	var all [][]ser
	for t := 0; t < targets; t++ {
		inst := fmt.Sprintf("host-%02d:9100", t)
		var ss []ser
		add := func(kind int, rate float64, kv ...string) {
			ss = append(ss, ser{l: labels.FromStrings(append([]string{"job", "node", "instance", inst}, kv...)...), v: rng.Float64() * 1000, rate: rate, kind: kind})
		}
		add(3, 0, "__name__", "up")
		for cpu := 0; cpu < 4; cpu++ {
			for _, mode := range []string{"idle", "user", "system", "iowait", "irq", "softirq", "steal", "nice"} {
				add(0, rng.Float64(), "__name__", "node_cpu_seconds_total", "cpu", fmt.Sprint(cpu), "mode", mode)
			}
		}
		for _, m := range []string{"node_load1", "node_load5", "node_load15", "node_memory_MemAvailable_bytes"} {
			add(1, 0, "__name__", m)
		}
		for _, le := range []string{"0.005", "0.01", "0.05", "0.1", "0.5", "1", "+Inf"} {
			add(0, 5, "__name__", "http_request_duration_seconds_bucket", "le", le)
		}
		// Most of a real node_exporter's series are constant for hours
		// (sizes, info metrics, flags): 607 of 950 in shared/data's capture.
		for i := 0; i < 60; i++ {
			add(2, 0, "__name__", "node_filesystem_size_bytes", "mountpoint", fmt.Sprintf("/mnt/%d", i))
		}
		all = append(all, ss)
	}
	n := 0
	for r := 0; r < rows; r++ {
		for t, ss := range all {
			app := db.RowAppender()
			ts := begin + int64(r)*step + rng.Int63n(100)
			for i := range ss {
				s := &ss[i]
				switch s.kind {
				case 0:
					s.v += s.rate * 15 * (0.5 + rng.Float64())
				case 1:
					s.v = math.Max(0, s.v+rng.NormFloat64())
				case 2:
					s.v = float64(s.l.Hash()%1000) * 1e6 // stable per series
				case 3:
					s.v = 1
				}
				if err := app.Append(s.l, ts, math.Round(s.v*100)/100); err != nil {
					return n, err
				}
				n++
			}
			if err := app.Commit(); err != nil {
				return n, fmt.Errorf("target %d row %d: %w", t, r, err)
			}
		}
	}
	return n, nil
}
