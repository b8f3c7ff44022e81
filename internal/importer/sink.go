package importer

import (
	"bytes"
	"context"
	"fmt"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/aerie-db/aerie/internal/ingest"
	"github.com/aerie-db/aerie/internal/tsdb"
)

// sampleSink writes sorted samples.
type sampleSink interface {
	add(*sortedSample) error
	finish() error // stores what is pending
	abort()        // after an error: releases what it holds
}

// labelCache maps records' label bytes to labels, so that a series' labels
// are decoded once per cache generation.
type labelCache struct {
	m  map[string]labels.Labels
	sb labels.ScratchBuilder
}

func (c *labelCache) get(b []byte) labels.Labels {
	if l, ok := c.m[string(b)]; ok {
		return l
	}
	if c.m == nil || len(c.m) >= 1<<16 {
		c.m = make(map[string]labels.Labels, 1024)
	}
	l := labelsOf(b, &c.sb)
	c.m[string(b)] = l
	return l
}

// dbSink writes into a data directory opened by the importer, given the
// samples series after series (the sorter's bySeries order). A series'
// samples older than the head's partitions (tsdb.RunWriter.Bound) go
// straight into blocks as history runs; the rest are appended to the
// engine, whose background loop flushes the partitions the import leaves
// behind, as in a server.
type dbSink struct {
	im      *importer
	db      *tsdb.DB
	app     storage.Appender
	pending int
	before  map[string]int64
	labels  labelCache

	run       *tsdb.RunWriter
	runSeries []byte // labels part of the record of the run's series
	runN      int    // samples given to run
	oldest    int64  // the least time the engine took when last asked (tsdb.DB.TimeBounds)
}

func newDBSink(im *importer) (*dbSink, error) {
	db, err := tsdb.Open(im.o.DataDir, &tsdb.Options{})
	if err != nil {
		return nil, fmt.Errorf("open data directory %s: %w", im.o.DataDir, err)
	}
	run, err := db.NewRunWriter(im.ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	oldest, _ := db.TimeBounds()
	return &dbSink{im: im, db: db, before: db.CommitRejections(), run: run, oldest: oldest}, nil
}

// runnable reports whether a series whose samples lie in [mint, maxt] can
// be one history run: older than the head's partitions, inside the
// retention.
func (s *dbSink) runnable(mint, maxt int64) bool {
	if maxt >= s.run.Bound() {
		return false
	}
	if mint < s.oldest {
		if s.db.CheckTime(mint) != nil {
			return false
		}
		s.oldest, _ = s.db.TimeBounds()
	}
	return true
}

// writeRun writes a series' samples, strictly increasing in time and
// runnable, as a history run (committed by finish).
func (s *dbSink) writeRun(lset labels.Labels, next func() (int64, float64, bool)) error {
	if err := s.run.Series(lset); err != nil {
		return err
	}
	s.runSeries = s.runSeries[:0] // a sorted series is never this one
	for {
		t, v, ok := next()
		if !ok {
			return nil
		}
		if err := s.run.Add(t, v); err != nil {
			return err
		}
		s.runN++
	}
}

func (s *dbSink) add(r *sortedSample) error {
	if r.t < s.run.Bound() && (len(s.runSeries) > 0 && bytes.Equal(r.lset, s.runSeries) || !s.run.Has(s.labels.get(r.lset))) {
		if r.t < s.oldest {
			if err := s.db.CheckTime(r.t); err != nil {
				l := s.labels.get(r.lset)
				s.im.sum.reject(ingest.AppendReason(err), 1, false, r.file, r.line, fmt.Sprintf("%s @%d: %v", l, r.t, err))
				return nil
			}
			s.oldest, _ = s.db.TimeBounds()
		}
		if !bytes.Equal(r.lset, s.runSeries) {
			if err := s.run.Series(s.labels.get(r.lset)); err != nil {
				return err
			}
			s.runSeries = append(s.runSeries[:0], r.lset...)
		}
		if err := s.run.Add(r.t, r.v); err != nil {
			return err
		}
		s.runN++
		return nil
	}
	if s.app == nil {
		s.app = s.db.Appender(context.Background())
	}
	l := s.labels.get(r.lset)
	if _, err := s.app.Append(0, l, r.t, r.v); err != nil {
		s.im.sum.reject(ingest.AppendReason(err), 1, false, r.file, r.line, fmt.Sprintf("%s @%d: %v", l, r.t, err))
		return nil
	}
	s.pending++
	if s.pending >= s.im.o.BatchSamples {
		return s.commit()
	}
	return nil
}

func (s *dbSink) commit() error {
	if s.app == nil {
		return nil
	}
	app, n := s.app, s.pending
	s.app, s.pending = nil, 0
	if err := app.Commit(); err != nil {
		return fmt.Errorf("commit of %d samples: %w", n, err)
	}
	s.im.sum.stored += n
	return nil
}

func (s *dbSink) finish() error {
	n, err := s.run.Commit()
	if err != nil {
		err = fmt.Errorf("history runs of %d samples: %w", s.runN, err)
	}
	s.im.sum.stored += int(n)
	if cerr := s.commit(); err == nil {
		err = cerr
	}
	// Samples the engine drops at Commit are counted there, without lines.
	for reason, n := range s.db.CommitRejections() {
		if d := n - s.before[reason]; d > 0 {
			s.im.sum.stored -= int(d)
			s.im.sum.reject(reason, int(d), false, -1, 0, "refused by the engine at commit")
		}
	}
	// Everything into blocks, as promtool's create-blocks-from does: the
	// samples of any age the backfill took, then the head.
	if err == nil {
		err = s.db.FlushBackfill()
	}
	if err == nil {
		err = s.db.FlushHead()
	}
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	return err
}

func (s *dbSink) abort() {
	s.run.Abort()
	if s.app != nil {
		_ = s.app.Rollback()
	}
	_ = s.db.Close()
}
