package tsdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/difftest"
)

// aerieEngine adapts a DB to the differential harness.
type aerieEngine struct{ *DB }

func (e aerieEngine) NewAppender() difftest.Appender { return e.DB.RowAppender() }

// TestDifferential writes one randomized workload into Aerie and into
// prometheus/tsdb and compares random Selects and PromQL results bit for
// bit: in the head, after a restart that replays the WAL, after flushing
// to blocks, and after reopening the blocks. Short mode uses the small
// workload (CI runs the full one without -race).
func TestDifferential(t *testing.T) {
	cfg := difftest.Full()
	selects := 400
	if testing.Short() {
		cfg = difftest.Small()
		selects = 100
	}
	w := difftest.Generate(cfg)

	prom, err := difftest.OpenProm(t.TempDir(), cfg.OOOWindow)
	require.NoError(t, err)
	defer prom.Close()
	dir := t.TempDir()
	opts := &Options{OOOWindow: cfg.OOOWindow, FlushCheckInterval: -1}
	db, err := Open(dir, opts)
	require.NoError(t, err)

	start := time.Now()
	ps := w.Write(t, prom)
	t.Logf("prometheus/tsdb: %v in %v", ps, time.Since(start))
	start = time.Now()
	as := w.Write(t, aerieEngine{db})
	t.Logf("aerie: %v in %v (%d series in %d groups)", as, time.Since(start), db.Head().NumSeries(), db.Head().NumGroups())
	// Prometheus rejects at Append, Aerie at Commit: compare per sample.
	require.Equal(t, ps.Accepted, as.Accepted)
	require.Equal(t, len(ps.Outcome), len(as.Outcome))
	for i := range ps.Outcome {
		pa, aa := ps.Outcome[i] == difftest.OutcomeAccepted, as.Outcome[i] == difftest.OutcomeAccepted
		require.Equal(t, pa, aa, "sample %d: accepted by prometheus %v, by aerie %v", i, pa, aa)
	}

	compare := func(stage string) {
		t.Run(stage, func(t *testing.T) {
			start := time.Now()
			n := difftest.CompareSelect(t, w, prom, db, selects, 7)
			qs := difftest.CompareQueries(t, w, prom, db)
			w.Verify(t, db)
			t.Logf("%s: %d selects (%d non-empty), queries %+v, in %v", stage, selects, n, qs, time.Since(start))
		})
	}
	compare("head")

	require.NoError(t, db.Close())
	db, err = Open(dir, opts)
	require.NoError(t, err)
	compare("wal-replay")

	require.NoError(t, db.FlushHead())
	require.NotEmpty(t, db.Blocks())
	compare("blocks")

	require.NoError(t, db.Close())
	db, err = Open(dir, opts)
	require.NoError(t, err)
	defer db.Close()
	require.NotEmpty(t, db.Blocks())
	compare("blocks-reopened")
}
