package block

import (
	"context"
	"fmt"
	"path/filepath"
)

// SeriesDataBytes returns the bytes local series id takes in the block's
// data: its value columns and, for each group it is in, its share of the
// group's timestamp column (divided by the group's columns). It is 0 for
// an unknown id.
func (r *Reader) SeriesDataBytes(id uint32) int64 {
	if int(id) >= r.numSeries() {
		return 0
	}
	var data int64
	for _, l := range r.seriesLocs(id) {
		g := &r.groups[l.group]
		c := &g.cols[l.col]
		data += c.dataLen()
		if n := int64(len(g.cols)); n > 0 {
			data += g.tsLen / n
		}
	}
	return data
}

// SeriesBytes returns SeriesDataBytes and, in the index, the bytes of
// local series id's block metrics (a remote block's are fetched if they
// are not in memory). It is 0, 0 for an unknown id. A scan over many
// series takes MetricsSection once and calls RecordLen instead.
func (r *Reader) SeriesBytes(ctx context.Context, id uint32) (index, data int64, err error) {
	if int(id) >= r.numSeries() {
		return 0, 0, nil
	}
	ms, err := r.MetricsSection(ctx)
	if err != nil {
		return 0, 0, err
	}
	return ms.RecordLen(id), r.SeriesDataBytes(id), nil
}

// Sizes is where a block's bytes go, by part.
type Sizes struct {
	Timestamps int64 // the groups' timestamp columns (data)
	Values     int64 // the series' value columns (data)
	DataOther  int64 // the rest of the data file: header, CRCs, padding
	Metrics    int64 // the index's metrics section (block metrics)
	IndexOther int64 // the rest of the index: labels, postings, groups, column metas
	// Chunks and ChunkBytes count value-column chunks by kind (index 0:
	// empty, 1: constant, 2: decimal, 3: XOR); columns of data version 1
	// are not chunked and are not counted.
	Chunks, ChunkBytes [chunkKinds]int64
}

// Add adds o's bytes and chunks to s.
func (s *Sizes) Add(o Sizes) {
	s.Timestamps += o.Timestamps
	s.Values += o.Values
	s.DataOther += o.DataOther
	s.Metrics += o.Metrics
	s.IndexOther += o.IndexOther
	for k := range s.Chunks {
		s.Chunks[k] += o.Chunks[k]
		s.ChunkBytes[k] += o.ChunkBytes[k]
	}
}

// Sizes returns where the block's bytes go. It reads one byte per value
// chunk (its kind) from the data file; a remote block's chunks are not
// counted.
func (r *Reader) Sizes() (Sizes, error) {
	var s Sizes
	for gi := range r.groups {
		g := &r.groups[gi]
		s.Timestamps += g.tsLen
		for ci := range g.cols {
			c := &g.cols[ci]
			s.Values += c.dataLen()
			if c.ch.ends == nil || r.f == nil {
				continue
			}
			var prev uint32
			for _, end := range c.ch.ends {
				var hdr [1]byte
				if end > prev {
					if _, err := r.data.ReadAt(hdr[:], c.off+int64(prev)); err != nil {
						return s, fmt.Errorf("block %s: %w", r.dir, err)
					}
				}
				k := hdr[0] & 7
				if k >= chunkKinds {
					return s, &CorruptionError{File: filepath.Join(r.dir, DataFilename), Offset: c.off + int64(prev), Err: fmt.Errorf("chunk kind %d", k)}
				}
				s.Chunks[k]++
				s.ChunkBytes[k] += int64(end - prev)
				prev = end
			}
		}
	}
	s.DataOther = r.meta.Stats.DataBytes - s.Timestamps - s.Values
	s.Metrics = r.mLen
	s.IndexOther = r.meta.Stats.IndexBytes - s.Metrics
	return s, nil
}
