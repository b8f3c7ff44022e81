package tsdb

import (
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/crashtest"
)

const crashChildEnv = "AERIE_CRASH_CHILD_DIR"

// crashSeries returns the label set of series s of target g.
func crashSeries(g, s int) labels.Labels {
	return labels.FromStrings("__name__", fmt.Sprintf("m%d", s), "job", "crash", "instance", strconv.Itoa(g))
}

// crashValue is the value of series s at row i: derived, so the parent can
// check it.
func crashValue(g, s int, i int64) float64 { return float64(i)*1.5 + float64(g*100+s) }

// TestCrashChild is the child of TestCrashKill9: it appends rows forever
// and prints "ack G I" after each commit of row I of target G returned.
func TestCrashChild(t *testing.T) {
	dir := crashtest.ChildDir(t, crashChildEnv)
	db, err := Open(dir, &Options{PartitionRange: 60_000, OOOWindow: 10_000, FlushCheckInterval: 20 * time.Millisecond, WALSegmentSize: 64 << 10})
	crashtest.Check("open", err)
	start := int64(0)
	if mt := db.Head().MaxTime(); mt != math.MinInt64 {
		start = mt/1000 + 1
	} else if bs := db.Blocks(); len(bs) > 0 {
		start = bs[len(bs)-1].MaxTime/1000 + 1
	}
	for i := start; ; i++ {
		for g := 0; g < 4; g++ {
			app := db.RowAppender()
			for s := 0; s < 10; s++ {
				crashtest.Check("append", app.Append(crashSeries(g, s), i*1000, crashValue(g, s, i)))
			}
			crashtest.Check("commit", app.Commit())
			crashtest.Ack(g, i)
		}
	}
}

// TestCrashKill9 kills a child that appends with acknowledgements at
// random points and checks that every acknowledged row survives.
func TestCrashKill9(t *testing.T) {
	dir, iterations := crashtest.Parent(t, "AERIE_CRASH_ITERATIONS", 20)
	acked := crashtest.Acks{}
	crashtest.KillLoop(t, crashtest.Config{Child: "TestCrashChild", Env: crashChildEnv, Dir: dir, Iterations: iterations, MinDelay: 50 * time.Millisecond, Spread: 400 * time.Millisecond, Acks: acked},
		nil, func(it int) { verifyCrashDir(t, dir, acked, it) })
	t.Logf("%d kills, %d acknowledged rows verified after each", iterations, acked.Rows())
}

func verifyCrashDir(t *testing.T, dir string, acked crashtest.Acks, it int) {
	t.Helper()
	db, err := Open(dir, &Options{PartitionRange: 60_000, OOOWindow: 10_000, FlushCheckInterval: -1, WALSegmentSize: 64 << 10})
	require.NoError(t, err, "iteration %d: reopen", it)
	defer db.Close()
	for g, rows := range acked {
		for s := 0; s < 10; s++ {
			got := query(t, db, math.MinInt64, math.MaxInt64,
				labels.MustNewMatcher(labels.MatchEqual, "__name__", fmt.Sprintf("m%d", s)),
				labels.MustNewMatcher(labels.MatchEqual, "instance", strconv.Itoa(g)))
			samples := got[crashSeries(g, s).String()]
			require.NotEmpty(t, samples, "iteration %d: series %d/%d lost", it, g, s)
			byT := map[int64]float64{}
			for _, x := range samples {
				byT[x.t] = x.v
			}
			for i := range rows {
				v, ok := byT[i*1000]
				require.True(t, ok, "iteration %d: acknowledged row %d of target %d series %d lost", it, i, g, s)
				require.Equal(t, crashValue(g, s, i), v)
			}
		}
	}
}
