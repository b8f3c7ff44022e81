package importer

import (
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

// dbSink appends to a data directory opened by the importer. The engine's
// background loop flushes the partitions the import leaves behind, as in
// a server.
type dbSink struct {
	im      *importer
	db      *tsdb.DB
	app     storage.Appender
	pending int
	before  map[string]int64
	labels  labelCache
}

func newDBSink(im *importer) (*dbSink, error) {
	db, err := tsdb.Open(im.o.DataDir, &tsdb.Options{})
	if err != nil {
		return nil, fmt.Errorf("open data directory %s: %w", im.o.DataDir, err)
	}
	return &dbSink{im: im, db: db, before: db.CommitRejections()}, nil
}

func (s *dbSink) add(r *sortedSample) error {
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
	err := s.commit()
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
	if s.app != nil {
		_ = s.app.Rollback()
	}
	_ = s.db.Close()
}
