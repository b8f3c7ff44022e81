package bucketbench

import (
	"context"
	"testing"
	"time"

	"github.com/aerie-db/aerie/bench/harness/harnesstest"
	"github.com/stretchr/testify/require"
)

// TestRun: a tiny run of both workloads completes with equal answers
// (Run fails otherwise), every query kind finds its series through both
// readers, and the report round-trips through JSON into Markdown.
func TestRun(t *testing.T) {
	scales["test"] = map[string]scale{
		"node": {Targets: 1, Interval: 30 * time.Minute},
		"tsbs": {Targets: 100, Interval: 50 * time.Minute},
	}
	defer delete(scales, "test")
	workloads := []string{"node", "tsbs"}
	if testing.Short() {
		workloads = workloads[:1] // tsbs' 1,000 series take a minute under -race; scripts/test.sh runs both at small scale
	}
	rep, err := Run(context.Background(), Config{Scale: "test", Workloads: workloads, Latency: time.Millisecond, Dir: t.TempDir()})
	require.NoError(t, err)
	require.Len(t, rep.Workloads, len(workloads))
	for _, w := range rep.Workloads {
		require.Len(t, w.Queries, 9, w.Workload)
		require.NotEmpty(t, w.AerieBlocks)
		require.NotEmpty(t, w.PromBlocks)
		for _, q := range w.Queries {
			require.Equal(t, 3, q.Instances)
			require.Positive(t, q.Series, "%s %s %s", w.Workload, q.Name, q.Range)
			require.Positive(t, q.Aerie.Gets, "%s %s %s", w.Workload, q.Name, q.Range)
			require.Positive(t, q.Thanos.Gets, "%s %s %s", w.Workload, q.Name, q.Range)
			require.GreaterOrEqual(t, q.Aerie.Fetched, q.Aerie.Needed)
		}
		// 100 series: tsbs spans 100 hosts exactly, node whole metric
		// families of one target, at least 100.
		if w.Workload == "tsbs" {
			require.Equal(t, 300, w.Queries[6].Series)
		} else {
			require.GreaterOrEqual(t, w.Queries[6].Series, 300)
		}
	}
	// The report reads back through the workload (the registry's reader)
	// to the same JSON, and renders.
	md := harnesstest.RoundTrip(t, Bucket, rep)
	require.Contains(t, md, "| 10 series | 1h |")
}
