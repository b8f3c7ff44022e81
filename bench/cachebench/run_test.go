package cachebench

import (
	"context"
	"os"
	"testing"

	"github.com/aerie-db/aerie/bench/harness/harnesstest"
	"github.com/stretchr/testify/require"
)

// TestRun runs two workloads of the small scale end to end against
// Debian's influxd and memcached. Run fails on any sampled answer that
// differs from InfluxDB's; the test checks that every system reported,
// that both caches hit, and that the report reads back and renders.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("about 20 s")
	}
	if err := Available(); err != nil {
		if os.Getenv("CI") != "" || os.Getenv("AERIE_REQUIRE_CACHEBENCH") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	rep, err := Run(context.Background(), Config{Scale: "small", Queries: 300, Workloads: []string{"full", "small"}, CheckEvery: 10, Dir: t.TempDir(), Log: harnesstest.Log(t)})
	require.NoError(t, err)
	require.Len(t, rep.Workloads, 2)
	require.Len(t, rep.Results, 6)
	for _, r := range rep.Results {
		require.Equal(t, 300, r.Queries, "%s %s", r.Workload, r.System)
		require.Equal(t, 30, r.Checked, "%s %s", r.Workload, r.System)
		require.Positive(t, r.Bytes, "%s %s", r.Workload, r.System)
		require.Positive(t, r.BandwidthMBps, "%s %s", r.Workload, r.System)
		require.Positive(t, r.P50Ms, "%s %s", r.Workload, r.System)
		switch r.System {
		case NoCache:
			require.Equal(t, r.Queries, r.Misses)
			require.Zero(t, r.CacheBytes)
			require.EqualValues(t, r.Queries, r.DBQueries)
		default:
			require.Positive(t, r.Hits+r.Partials, "%s %s", r.Workload, r.System)
			require.Positive(t, r.CacheBytes, "%s %s", r.Workload, r.System)
			require.Less(t, r.DBQueries, int64(r.Queries), "%s %s", r.Workload, r.System)
		}
	}
	require.Len(t, rep.Ratios, 10)

	// The report reads back through the workload (the registry's reader)
	// to the same JSON, and renders.
	md := harnesstest.RoundTrip(t, Cache, rep)
	require.Contains(t, md, "| full | 1m–1w | 300 |")
	require.Contains(t, md, "| small | memcached-4h |")
}

func TestReadRejectsOthers(t *testing.T) {
	_, err := Cache.Read("x.json", []byte(`{"kind":"graphite"}`))
	require.ErrorContains(t, err, `not "cache"`)
	_, err = Cache.Read("x.json", []byte(`{`))
	require.Error(t, err)
}
