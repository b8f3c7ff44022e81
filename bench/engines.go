package bench

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	promtsdb "github.com/prometheus/prometheus/tsdb"

	"github.com/aerie-db/aerie/bench/workload"
	"github.com/aerie-db/aerie/internal/tsdb"
	"github.com/aerie-db/aerie/internal/wal"
)

// engine is one storage engine under measurement. Both are opened with
// their WAL on and background flushing off, so every phase controls when
// data move from memory to disk.
type engine interface {
	storage.Queryable
	name() string
	// target prepares a writer of one workload target's rows.
	target(series []labels.Labels) (targetWriter, error)
	// flushAll moves every sample in memory into blocks.
	flushAll() error
	// diskBytes returns the bytes of the blocks (data and index separately).
	diskBytes() (data, index int64, err error)
	close() error
}

// targetWriter writes the rows of one target; it is used by one goroutine.
type targetWriter interface {
	write(row *workload.Row) error
}

// aerieOptions are the engine options of a bench run.
type aerieOptions struct {
	tupleSize      int // head; at most head.MaxTupleSize
	blockTupleSize int
	walSync        wal.SyncMode
	flushCPU       float64 // tsdb.Options.FlushCPUBudget
	hotPartitions  int     // tsdb.Options.HotPartitions
}

// aerieEngine is Aerie's engine.
type aerieEngine struct {
	*tsdb.DB
}

func openAerie(dir string, o aerieOptions) (*aerieEngine, error) {
	db, err := tsdb.Open(dir, &tsdb.Options{
		TupleSize:          o.tupleSize,
		BlockTupleSize:     o.blockTupleSize,
		FlushCPUBudget:     o.flushCPU,
		HotPartitions:      o.hotPartitions,
		WALSync:            o.walSync,
		FlushCheckInterval: -1,
	})
	if err != nil {
		return nil, fmt.Errorf("open aerie in %s: %w", dir, err)
	}
	return &aerieEngine{db}, nil
}

func (e *aerieEngine) name() string { return "aerie" }

func (e *aerieEngine) target(series []labels.Labels) (targetWriter, error) {
	return newAppenderTarget(e.DB.Appender, series), nil
}

// appenderTarget writes a target's rows as Prometheus' scrape loop does,
// into either engine: one appender and one Commit per scrape, the series'
// refs cached. It is the path every write to Aerie takes (remote write,
// line protocol, scraping).
type appenderTarget struct {
	appender func(context.Context) storage.Appender
	series   []labels.Labels
	refs     []storage.SeriesRef
}

func newAppenderTarget(app func(context.Context) storage.Appender, series []labels.Labels) *appenderTarget {
	return &appenderTarget{appender: app, series: series, refs: make([]storage.SeriesRef, len(series))}
}

func (t *appenderTarget) write(row *workload.Row) error {
	app := t.appender(context.Background())
	for i, v := range row.Values {
		if row.Present != nil && !row.Present[i] {
			continue
		}
		ref, err := app.Append(t.refs[i], t.series[i], row.T, v)
		if err != nil {
			_ = app.Rollback()
			return fmt.Errorf("append %s at %d: %w", t.series[i], row.T, err)
		}
		t.refs[i] = ref
	}
	return app.Commit()
}

func (e *aerieEngine) flushAll() error { return e.FlushHead() }

// diskBytes counts every file of the blocks directory: "data" files as
// data, the rest (index, meta.json) as index, plus the global tag
// dictionary, which is part of every block's index.
func (e *aerieEngine) diskBytes() (data, index int64, err error) {
	data, index, err = dirBytes(filepath.Join(e.Dir(), "blocks"), func(p string) bool { return filepath.Base(p) == "data" })
	if err != nil {
		return 0, 0, err
	}
	fi, err := os.Stat(filepath.Join(e.Dir(), "tagdict"))
	if err != nil {
		return 0, 0, err
	}
	return data, index + fi.Size(), nil
}

// dirBytes sums the sizes of the files under dir, split by isData.
func dirBytes(dir string, isData func(path string) bool) (data, index int64, err error) {
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if isData(p) {
			data += fi.Size()
		} else {
			index += fi.Size()
		}
		return nil
	})
	return data, index, err
}

func (e *aerieEngine) close() error { return e.Close() }

// promEngine is prometheus/tsdb used as a library, with its defaults
// except that automatic compaction is off.
type promEngine struct {
	db *promtsdb.DB
}

func openProm(dir string) (*promEngine, error) {
	opts := promtsdb.DefaultOptions()
	db, err := promtsdb.Open(dir, nil, nil, opts, nil)
	if err != nil {
		return nil, fmt.Errorf("open prometheus/tsdb in %s: %w", dir, err)
	}
	db.DisableCompactions()
	return &promEngine{db: db}, nil
}

func (e *promEngine) name() string { return "prometheus" }

func (e *promEngine) Querier(mint, maxt int64) (storage.Querier, error) {
	return e.db.Querier(mint, maxt)
}

func (e *promEngine) target(series []labels.Labels) (targetWriter, error) {
	return newAppenderTarget(e.db.Appender, series), nil
}

// flushAll compacts the head into blocks of Prometheus' default 2 h range,
// one window at a time, as its own head compaction does.
func (e *promEngine) flushAll() error {
	h := e.db.Head()
	if h.NumSeries() == 0 || h.MinTime() == math.MaxInt64 {
		return nil
	}
	const r = promtsdb.DefaultBlockDuration
	// Read maxt once: truncating an emptied head moves its MaxTime up.
	mint, maxt := h.MinTime(), h.MaxTime()
	for lo := mint - mod(mint, r); lo <= maxt; lo += r {
		if err := e.db.CompactHead(promtsdb.NewRangeHead(h, lo, lo+r-1)); err != nil {
			return err
		}
	}
	return nil
}

func mod(a, b int64) int64 { return ((a % b) + b) % b }

// diskBytes counts every file of the blocks: chunks/ as data, the rest
// (index, meta.json, tombstones) as index.
func (e *promEngine) diskBytes() (data, index int64, err error) {
	for _, b := range e.db.Blocks() {
		d, i, err := dirBytes(b.Dir(), func(p string) bool { return strings.Contains(filepath.ToSlash(p), "/chunks/") })
		if err != nil {
			return 0, 0, err
		}
		data, index = data+d, index+i
	}
	return data, index, nil
}

func (e *promEngine) close() error { return e.db.Close() }
