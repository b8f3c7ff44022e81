package bucket

import (
	"context"
	"log/slog"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/crashtest"
	"github.com/aerie-db/aerie/internal/tsdb"
)

const uploadCrashEnv = "AERIE_UPLOAD_CRASH_DIR"

// crashOpts are the engine options of the crash test: one-minute
// partitions, blocks moved to the bucket once two minutes older than the
// newest data, and the background loops every 20 ms.
func crashOpts(dir string, loops bool) (*tsdb.Options, *Bucket, error) {
	b, err := Open(Config{}, dir, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	if err != nil {
		return nil, nil, err
	}
	o := &tsdb.Options{PartitionRange: 60_000, OOOWindow: 10_000, FlushCheckInterval: 20 * time.Millisecond,
		WALSegmentSize: 64 << 10, LocalRetention: 120_000, Remote: NewTier(b, 8<<10, 1<<20)}
	if !loops {
		o.FlushCheckInterval = -1
	}
	return o, b, nil
}

func uploadCrashValue(g int, i int64) float64 { return float64(i)*0.5 + float64(g) }

// TestUploadCrashChild is the child of TestUploadCrashKill9: it appends
// rows of 4 targets forever, the engine flushing, compacting and moving
// blocks to the filesystem bucket meanwhile, and prints "ack G I" after
// each commit of row I of target G returned.
func TestUploadCrashChild(t *testing.T) {
	dir := crashtest.ChildDir(t, uploadCrashEnv)
	o, _, err := crashOpts(dir, true)
	crashtest.Check("open", err)
	db, err := tsdb.Open(dir, o)
	crashtest.Check("open", err)
	start := int64(0)
	if mt := db.Head().MaxTime(); mt != math.MinInt64 {
		start = mt/1000 + 1
	} else if bs := db.Blocks(); len(bs) > 0 {
		start = bs[len(bs)-1].MaxTime/1000 + 1
	}
	for i := start; ; i++ {
		for g := range 4 {
			app := db.RowAppender()
			crashtest.Check("append", app.Append(labels.FromStrings("__name__", "m", "job", "crash", "instance", strconv.Itoa(g)), i*1000, uploadCrashValue(g, i)))
			crashtest.Check("commit", app.Commit())
			crashtest.Ack(g, i)
		}
	}
}

// TestUploadCrashKill9 kills the child at random points, uploads included,
// and checks after each kill that every acknowledged row is answered,
// from the data directory or the bucket, and that every block visible in
// the bucket passes Verify.
func TestUploadCrashKill9(t *testing.T) {
	dir, iterations := crashtest.Parent(t, "AERIE_UPLOAD_CRASH_ITERATIONS", 12)
	acked := crashtest.Acks{}
	moved := 0
	crashtest.KillLoop(t, crashtest.Config{Child: "TestUploadCrashChild", Env: uploadCrashEnv, Dir: dir, Iterations: iterations, MinDelay: 300 * time.Millisecond, Spread: 900 * time.Millisecond, Acks: acked},
		nil, func(it int) {
			o, b, err := crashOpts(dir, false)
			require.NoError(t, err)
			db, err := tsdb.Open(dir, o)
			require.NoError(t, err, "iteration %d: reopen", it)
			for g, rows := range acked {
				got := dbSamples(t, db, math.MinInt64, math.MaxInt64)[labels.FromStrings("__name__", "m", "job", "crash", "instance", strconv.Itoa(g)).String()]
				have := map[int64]float64{}
				for _, s := range got {
					have[int64(s[0])] = s[1]
				}
				for i := range rows {
					v, ok := have[i*1000]
					require.True(t, ok, "iteration %d: target %d row %d acknowledged but lost", it, g, i)
					require.Equal(t, uploadCrashValue(g, i), v)
				}
			}
			rep, err := Verify(context.Background(), b)
			require.NoError(t, err)
			require.Empty(t, rep.Problems, "iteration %d", it)
			moved = rep.Blocks
			require.NoError(t, db.Close())
			require.NoError(t, b.Close())
		})
	require.Positive(t, moved, "no block reached the bucket: the kills never met an upload")
	t.Logf("%d kills; %d blocks in the bucket at the end", iterations, moved)
}
