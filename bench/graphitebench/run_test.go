package graphitebench

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/bench/harness/harnesstest"
	"github.com/aerie-db/aerie/internal/graphite/graphitetest"
)

// TestRun runs the small scale end to end: this repository's aerie,
// built for the test, against carbon-cache and graphite-web. Run fails on
// any point Aerie did not store as sent; the test checks that both peers
// reported, that carbon kept every point (its cache is unlimited), that
// the panels' answers are equal, and that the report reads back and
// renders.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("about a minute")
	}
	if err := graphitetest.Available(); err != nil {
		if os.Getenv("CI") != "" || os.Getenv("AERIE_REQUIRE_GRAPHITE") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	bin := harnesstest.BuildAerie(t)

	rep, err := Run(context.Background(), Config{Options: harness.Options{Scale: "small", Aerie: bin, Dir: t.TempDir(), Log: harnesstest.Log(t)}, Runs: 1})
	require.NoError(t, err)
	require.Len(t, rep.Ingest, 2) // small: Aerie once, at carbon's size
	sc := Scales["small"]
	for _, in := range rep.Ingest {
		require.Equal(t, int64(sc.CarbonSeries)*int64(sc.Span/Step), in.Points, in.Peer)
		require.Equal(t, in.Points, in.Stored, in.Peer)
		require.Zero(t, in.Dropped, in.Peer)
		require.Positive(t, in.AcceptedPerSecond, in.Peer)
		require.Positive(t, in.StoredPerSecond, in.Peer)
		require.Positive(t, in.RSSPeakBytes, in.Peer)
	}
	require.Len(t, rep.Panels, len(Panels))
	for _, p := range rep.Panels {
		require.Zero(t, p.Diffs, "%s: %v", p.Target, p.Examples)
		require.Positive(t, p.Points, p.Target)
		require.Positive(t, p.Aerie.P50Ms, p.Target)
		require.Positive(t, p.Graphite.P50Ms, p.Target)
	}
	require.NotEmpty(t, rep.Ratios)

	md := harnesstest.RoundTrip(t, Graphite, rep)
	require.Contains(t, md, "| aerie | 5000 | 150000 | 4 |")
	require.Contains(t, md, "`sumSeries(bench.host0000?.cpu.*.user)`")
}
