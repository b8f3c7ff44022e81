package tsdb

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/crashtest"
)

// TestCompactionFoldsBackfill: head blocks and overlapping backfill
// blocks are merged (vertically, then by level); answers are the same
// before, after, and after a restart, with fewer blocks, levels and
// parents recorded, and every series' group time column spanning the
// output.
func TestCompactionFoldsBackfill(t *testing.T) {
	opts := &Options{FlushCheckInterval: -1, BackfillIdle: time.Hour}
	db, dir := openDir(t, opts)
	want := map[string][]smp{}
	base := 100 * day
	// Host 0 through the head: 3 days, flushed block by block.
	writeHostDay(t, db, 0, base, base+3*day, 60_000, want, nil)
	require.NoError(t, db.Compact())
	// Hosts 1-3 back-filled over the first two days, one after another.
	for h := 1; h < 4; h++ {
		writeHostDay(t, db, h, base, base+2*day, 60_000, want, nil)
	}
	require.NoError(t, db.FlushBackfill())
	before := len(db.Blocks())
	requireSamples(t, db, want, "before compaction")
	require.NoError(t, db.Compact())
	requireSamples(t, db, want, "after compaction")
	after := db.Blocks()
	require.Less(t, len(after), before, "blocks folded")
	st := db.CompactionStats()
	require.Positive(t, st.Compactions)
	require.Positive(t, st.BytesOut)
	leveled := 0
	for _, m := range after {
		if m.Compaction.Level > 0 {
			leveled++
			require.NotEmpty(t, m.Compaction.Parents)
		}
	}
	require.Positive(t, leveled)
	for i := 1; i < len(after); i++ { // everything up to the horizon is merged
		for j := 0; j < i; j++ {
			if after[i].MaxTime <= db.compactionHorizon() && after[j].MaxTime <= db.compactionHorizon() {
				require.False(t, after[i].MinTime < after[j].MaxTime && after[j].MinTime < after[i].MaxTime,
					"blocks %s and %s overlap after compaction", after[i].ULID, after[j].ULID)
			}
		}
	}
	reopen(t, &db, dir, opts)
	defer db.Close()
	requireSamples(t, db, want, "after restart")
}

// TestCompactionDropsDeleted: tombstoned samples are gone from compacted
// blocks, not only hidden.
func TestCompactionDropsDeleted(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{FlushCheckInterval: -1, BackfillIdle: time.Hour})
	require.NoError(t, err)
	defer db.Close()
	want := map[string][]smp{}
	base := 100 * day
	writeHostDay(t, db, 0, base, base+2*day, 60_000, want, nil)
	require.NoError(t, db.flush(false))
	l := hostSeries(0, 1)
	require.NoError(t, db.Delete(context.Background(), base, base+day-1, labels.MustNewMatcher(labels.MatchEqual, "__name__", l.Get("__name__"))))
	samplesBefore := 0
	for _, m := range db.Blocks() {
		samplesBefore += m.Stats.Samples
	}
	require.NoError(t, db.Compact())
	samplesAfter := 0
	for _, m := range db.Blocks() {
		samplesAfter += m.Stats.Samples
	}
	require.Less(t, samplesAfter, samplesBefore, "the deleted day is gone from the blocks")
	got := query(t, db, base, base+day-1, labels.MustNewMatcher(labels.MatchEqual, "__name__", l.Get("__name__")))
	require.Empty(t, got)
}

// TestCompactedBlockCorruptionQuarantined: a flipped byte in a compacted
// block's data is found at open; the block is quarantined, the rest
// serves.
func TestCompactedBlockCorruptionQuarantined(t *testing.T) {
	opts := &Options{FlushCheckInterval: -1, BackfillIdle: time.Hour}
	db, dir := openDir(t, opts)
	writeHostDay(t, db, 0, 100*day, 103*day, 60_000, map[string][]smp{}, nil)
	require.NoError(t, db.Compact())
	var victim string
	for _, m := range db.Blocks() {
		if m.Compaction.Level > 0 {
			victim = m.ULID
		}
	}
	require.NotEmpty(t, victim)
	n := len(db.Blocks())
	require.NoError(t, db.Close())
	p := filepath.Join(dir, blocksDirname, victim, "data")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	b[len(b)/2] ^= 0x40
	require.NoError(t, os.WriteFile(p, b, 0o644))
	db, err = Open(dir, opts)
	require.NoError(t, err)
	defer db.Close()
	require.Equal(t, n-1, len(db.Blocks()))
	require.EqualValues(t, 1, db.Stats().Quarantined)
	_, err = os.Stat(filepath.Join(dir, quarantineDirname, victim))
	require.NoError(t, err)
}

const compactCrashEnv = "AERIE_COMPACT_CRASH_DIR"

func compactCrashOptions(check time.Duration) *Options {
	return &Options{PartitionRange: 60_000, OOOWindow: 10_000, FlushCheckInterval: check, WALSegmentSize: 64 << 10,
		BackfillPartitionRange: 60_000, BackfillIdle: 30 * time.Millisecond, BackfillPartitions: 8}
}

// TestCompactionCrashChild is the child of TestCompactionCrashKill9: it
// writes current rows for targets 0-3 and, in the same commits, rows ten
// minutes old for targets 10-13 (the backfill), while flushes, backfill
// flushes and compactions run every 20 ms; it prints "ack G I" after each
// commit and "compactions N" now and then.
func TestCompactionCrashChild(t *testing.T) {
	dir := crashtest.ChildDir(t, compactCrashEnv)
	db, err := Open(dir, compactCrashOptions(20*time.Millisecond))
	crashtest.Check("open", err)
	start := int64(700)
	if mt := db.Head().MaxTime(); mt != math.MinInt64 {
		start = max(start, mt/1000+1)
	}
	for _, m := range db.Blocks() {
		start = max(start, m.Stats.MaxSampleTime/1000+1)
	}
	for i := start; ; i++ {
		app := db.Appender(context.Background())
		old := i - 600
		for g := 0; g < 4; g++ {
			for s := 0; s < 10; s++ {
				_, err := app.Append(0, crashSeries(g, s), i*1000, crashValue(g, s, i))
				crashtest.Check("append", err)
				_, err = app.Append(0, crashSeries(g+10, s), old*1000, crashValue(g+10, s, old))
				crashtest.Check("append", err)
			}
		}
		crashtest.Check("commit", app.Commit())
		for g := 0; g < 4; g++ {
			crashtest.Ack(g, i)
			crashtest.Ack(g+10, old)
		}
		if i%50 == 0 {
			fmt.Printf("compactions %d\n", db.CompactionStats().Compactions)
		}
	}
}

// TestCompactionCrashKill9 kills a child that writes current and
// backfilled rows while it flushes and compacts, at random points, and
// checks after each kill that every acknowledged row is there with its
// value, that no block outlived a compaction that replaced it, and that
// compactions did run.
func TestCompactionCrashKill9(t *testing.T) {
	dir, iterations := crashtest.Parent(t, "AERIE_CRASH_ITERATIONS", 20)
	acked := crashtest.Acks{}
	compactions, iterMax, compacted := int64(0), int64(0), 0
	crashtest.KillLoop(t, crashtest.Config{Child: "TestCompactionCrashChild", Env: compactCrashEnv, Dir: dir, Iterations: iterations, MinDelay: 300 * time.Millisecond, Spread: 1200 * time.Millisecond, Acks: acked}, func(l string) {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "compactions" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			iterMax = max(iterMax, n)
		}
	}, func(it int) {
		compactions += iterMax
		iterMax = 0
		compacted = max(compacted, verifyCompactionCrashDir(t, dir, acked, it))
	})
	require.Positive(t, compacted, "compacted blocks were found after a kill")
	t.Logf("%d kills, %d acknowledged rows (current and backfilled) verified after each; the children reported %d compactions, up to %d compacted blocks open after a kill", iterations, acked.Rows(), compactions, compacted)
}

// verifyCompactionCrashDir checks the directory after a kill and returns
// how many compacted blocks it holds.
func verifyCompactionCrashDir(t *testing.T, dir string, acked crashtest.Acks, it int) (compacted int) {
	t.Helper()
	db, err := Open(dir, compactCrashOptions(-1))
	require.NoError(t, err, "iteration %d: reopen", it)
	defer db.Close()
	parents := map[string]bool{}
	for _, m := range db.Blocks() {
		for _, p := range m.Compaction.Parents {
			parents[p] = true
		}
	}
	for _, m := range db.Blocks() {
		require.False(t, parents[m.ULID], "iteration %d: block %s is still open although an output replaced it", it, m.ULID)
		if m.Compaction.Level > 0 {
			compacted++
		}
	}
	for g, rows := range acked {
		for s := 0; s < 10; s++ {
			got := query(t, db, math.MinInt64, math.MaxInt64,
				labels.MustNewMatcher(labels.MatchEqual, "__name__", fmt.Sprintf("m%d", s)),
				labels.MustNewMatcher(labels.MatchEqual, "instance", strconv.Itoa(g)))
			byT := map[int64]float64{}
			for _, x := range got[crashSeries(g, s).String()] {
				_, dup := byT[x.t]
				require.False(t, dup, "iteration %d: sample at %d of %d/%d twice", it, x.t, g, s)
				byT[x.t] = x.v
			}
			for i := range rows {
				v, ok := byT[i*1000]
				require.True(t, ok, "iteration %d: acknowledged row %d of target %d series %d lost", it, i, g, s)
				require.Equal(t, crashValue(g, s, i), v)
			}
		}
	}
	return compacted
}
