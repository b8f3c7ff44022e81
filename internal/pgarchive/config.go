package pgarchive

import (
	"cmp"
	"errors"
	"fmt"
	"time"
)

// Config configures an Archiver. Zero fields take the defaults below.
type Config struct {
	// DSN is a libpq connection string or URL (pgx's syntax).
	DSN string
	// SegmentWidth is the number of series per ts row (Tgres's segment
	// width). It is fixed when a bundle is created; a bundle created with
	// another width keeps its own. Default 200.
	SegmentWidth int
	// MaxFlushesPerSecond limits the batches sent to PostgreSQL (Tgres's
	// max-flushes-per-second); 0 means no limit.
	MaxFlushesPerSecond float64
	// QueueSize bounds the ts row updates waiting to be written; a level
	// loop waits while the queue is full. Default 100000.
	QueueSize int
	// BatchRows is the number of ts row updates per batch (per flush).
	// Default 500.
	BatchRows int
	// ChunkSteps bounds the time range read from the source at once, in
	// steps of the level. Default 60.
	ChunkSteps int
	// Interval is how often a level loop that has caught up asks the
	// source for new data. Default 1s.
	Interval time.Duration
	// MaxBackoff caps the wait between retries after an error; waits
	// start at 100ms and double, with jitter. Default 10s.
	MaxBackoff time.Duration
}

const (
	defaultQueueSize  = 100000
	defaultBatchRows  = 500
	defaultChunkSteps = 60
	defaultInterval   = time.Second
	defaultMaxBackoff = 10 * time.Second
	minBackoff        = 100 * time.Millisecond
	maxSegmentWidth   = 1 << 16
)

// withDefaults validates c and fills in its zero fields.
func (c Config) withDefaults() (Config, error) {
	if c.DSN == "" {
		return c, errors.New("pgarchive: empty dsn")
	}
	c.SegmentWidth = cmp.Or(c.SegmentWidth, DefaultSegmentWidth)
	c.QueueSize = cmp.Or(c.QueueSize, defaultQueueSize)
	c.BatchRows = cmp.Or(c.BatchRows, defaultBatchRows)
	c.ChunkSteps = cmp.Or(c.ChunkSteps, defaultChunkSteps)
	c.Interval = cmp.Or(c.Interval, defaultInterval)
	c.MaxBackoff = cmp.Or(c.MaxBackoff, defaultMaxBackoff)
	switch {
	case c.SegmentWidth < 1 || c.SegmentWidth > maxSegmentWidth:
		return c, fmt.Errorf("pgarchive: segment width %d not in [1, %d]", c.SegmentWidth, maxSegmentWidth)
	case c.MaxFlushesPerSecond < 0:
		return c, fmt.Errorf("pgarchive: negative max flushes per second %v", c.MaxFlushesPerSecond)
	case c.QueueSize < 1:
		return c, fmt.Errorf("pgarchive: queue size %d < 1", c.QueueSize)
	case c.BatchRows < 1:
		return c, fmt.Errorf("pgarchive: batch rows %d < 1", c.BatchRows)
	case c.ChunkSteps < 1:
		return c, fmt.Errorf("pgarchive: chunk steps %d < 1", c.ChunkSteps)
	case c.Interval < 0:
		return c, fmt.Errorf("pgarchive: negative interval %v", c.Interval)
	case c.MaxBackoff < minBackoff:
		return c, fmt.Errorf("pgarchive: max backoff %v < %v", c.MaxBackoff, minBackoff)
	}
	return c, nil
}
