package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/prometheus/storage"
	promtsdb "github.com/prometheus/prometheus/tsdb"
)

// historyEngine is an engine written through storage.Appender, as
// importers and remote-write agents write, with explicit steps to move
// backfilled samples into blocks and to compact blocks.
type historyEngine interface {
	engine
	storage.Appendable
	// flushBackfill makes every backfilled sample part of a block: Aerie
	// flushes its backfill generations (FlushBackfill), Prometheus
	// compacts its out-of-order head (CompactOOOHead).
	flushBackfill() error
	// compact runs every compaction due: Aerie's CompactBlocks,
	// Prometheus' Compact (which also compacts its head if that is due).
	compact() error
	numBlocks() int
	blockSpans() []time.Duration // of every block, sorted
}

// promOOOWindow is Prometheus' out-of-order time window in the history
// run: a year, so that every backfilled sample takes its out-of-order path.
const promOOOWindow = 365 * day

// promMaxBlockDuration is what Prometheus' server sets for a retention of
// a year (10 % of it, at most 31 days), and Aerie's default MaxBlockRange.
const promMaxBlockDuration = 31 * day

// openPromHistory opens prometheus/tsdb with its out-of-order path on, a
// retention of a year and block ranges up to 31 days; automatic compaction
// is off, as in the other phases.
func openPromHistory(dir string) (*promEngine, error) {
	opts := promtsdb.DefaultOptions()
	opts.OutOfOrderTimeWindow = promOOOWindow.Milliseconds()
	opts.RetentionDuration = promOOOWindow.Milliseconds()
	opts.MaxBlockDuration = promMaxBlockDuration.Milliseconds()
	db, err := promtsdb.Open(dir, nil, nil, opts, nil)
	if err != nil {
		return nil, fmt.Errorf("open prometheus/tsdb in %s: %w", dir, err)
	}
	db.DisableCompactions()
	return &promEngine{db: db}, nil
}

// openHistory opens a fresh engine of the named kind for a history phase.
func (r *runner) openHistory(kind, phase string) (historyEngine, error) {
	if kind == "aerie" {
		e, err := r.open(kind, phase, 0)
		if err != nil {
			return nil, err
		}
		return e.(*aerieEngine), nil
	}
	dir := filepath.Join(r.dir, phase+"-"+kind)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	return openPromHistory(dir)
}

func (e *aerieEngine) flushBackfill() error { return e.FlushBackfill() }
func (e *aerieEngine) compact() error       { return e.CompactBlocks() }
func (e *aerieEngine) numBlocks() int       { return len(e.Blocks()) }

func (e *promEngine) Appender(ctx context.Context) storage.Appender { return e.db.Appender(ctx) }
func (e *promEngine) flushBackfill() error                          { return e.db.CompactOOOHead(context.Background()) }
func (e *promEngine) compact() error                                { return e.db.Compact(context.Background()) }
func (e *promEngine) numBlocks() int                                { return len(e.db.Blocks()) }

// blockSpans summarizes the blocks' ranges, for the log: "12×2h 3×24h".
func blockSpans(spans []time.Duration) string {
	var out string
	for i := 0; i < len(spans); {
		j := i
		for j < len(spans) && spans[j] == spans[i] {
			j++
		}
		if out != "" {
			out += " "
		}
		out += fmt.Sprintf("%d×%s", j-i, span(spans[i]))
		i = j
	}
	return out
}

func (e *aerieEngine) blockSpans() []time.Duration {
	var ds []time.Duration
	for _, m := range e.Blocks() {
		ds = append(ds, time.Duration(m.MaxTime-m.MinTime)*time.Millisecond)
	}
	return sortedDurations(ds)
}

func (e *promEngine) blockSpans() []time.Duration {
	var ds []time.Duration
	for _, b := range e.db.Blocks() {
		ds = append(ds, time.Duration(b.MaxTime()-b.MinTime())*time.Millisecond)
	}
	return sortedDurations(ds)
}
