package sensorbench

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/bench/harness/harnesstest"
)

// TestRun runs the small scale end to end: this repository's aerie,
// built for the test, against VictoriaMetrics. Run fails on any answer
// that does not match the data; the test checks that every phase
// reported, and that the report reads back and renders.
func TestRun(t *testing.T) {
	vmBin := harness.Options{}.Peer("victoria-metrics")
	if _, err := os.Stat(vmBin); err != nil {
		t.Skipf("no VictoriaMetrics binary at %s", vmBin)
	}
	bin := harnesstest.BuildAerie(t)

	rep, err := Run(context.Background(), Config{Options: harness.Options{Scale: "small", Aerie: bin, Dir: t.TempDir(), Log: harnesstest.Log(t)}, VM: vmBin})
	require.NoError(t, err)
	sc := Scales["small"]
	require.Equal(t, int64(sc.Sensors)*sc.Span.Milliseconds()/1000, rep.Records)
	require.Len(t, rep.Upload, 3)
	for _, u := range rep.Upload {
		require.Positive(t, u.RecordsPerSecond, u.Path)
	}
	require.Len(t, rep.Disk, 3)
	require.Len(t, rep.Index, 2)
	require.Len(t, rep.Search, 4) // two conditions, per sensor and all at once
	for _, s := range rep.Search {
		require.Positive(t, s.Intervals, "%s %s", s.Query, s.Condition)
	}
	// small covers 6 h: the 1 h range only, four modes × three writers,
	// and VictoriaMetrics' export for the full mode.
	require.Len(t, rep.Extract, 4*3+1)
	for _, e := range rep.Extract {
		require.Positive(t, e.Records, "%s %s %s %s", e.Peer, e.Mode, e.Range, e.Writer)
	}
	require.NotNil(t, rep.Decode)
	require.Equal(t, rep.Records, rep.Decode.Samples)
	require.NotEmpty(t, rep.Ratios)

	md := harnesstest.RoundTrip(t, Sensors, rep)
	require.Contains(t, md, "| vm | full | 1h | export (JSON lines) |")
}
