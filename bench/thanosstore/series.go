package thanosstore

import (
	"context"
	"fmt"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/tsdb/encoding"
)

// seriesEntry is a series the postings selected: where its entry is in the
// index, its labels, and those of its chunks that overlap the query.
type seriesEntry struct {
	off  int64
	lset labels.Labels
	chks []chunkMeta
}

type chunkMeta struct {
	ref        chunks.ChunkRef
	mint, maxt int64
}

// loadSeries fetches the series entries at offs (ascending) in one phase,
// reading estimatedMaxSeriesSize bytes from each entry's start as Thanos'
// preloadSeries does, and decodes them keeping chunks overlapping
// [mint, maxt].
func (b *Block) loadSeries(ctx context.Context, offs []int64, mint, maxt int64) ([]seriesEntry, error) {
	name, toc := b.hdr.name, b.hdr.toc
	for _, off := range offs {
		if off < int64(toc.Series) || off >= int64(toc.LabelIndices) {
			return nil, corruptf(name, off, "postings reference a series entry outside the series section [%d, %d)", toc.Series, toc.LabelIndices)
		}
	}

	entries := make([]seriesEntry, len(offs))
	parts := partition(len(offs), b.maxGap, func(i int) (int64, int64) {
		return offs[i], offs[i] + b.seriesEst
	})
	err := runPhase(ctx, b.stats, len(parts), func(ctx context.Context, i int) (int, error) {
		p := parts[i]
		buf, err := getRange(ctx, b.bkt, name, p.start, p.end-p.start, &b.stats.Gets, &b.stats.BytesFetched)
		if err != nil {
			return 1, err
		}
		chain := 1
		ended := int64(len(buf)) < p.end-p.start
		sb := labels.NewScratchBuilder(8)
		for k := p.first; k < p.last; k++ {
			off := offs[k]
			data, gets, err := b.fetchRecord(ctx, name, off, from(buf, off-p.start), ended, 0)
			chain += gets
			if err != nil {
				return chain, err
			}
			if entries[k], err = b.decodeSeries(data, &sb, mint, maxt); err != nil {
				return chain, &CorruptionError{Object: name, Offset: off, Err: err}
			}
			entries[k].off = off
		}
		return chain, nil
	})
	return entries, err
}

// decodeSeries decodes a series entry's payload: its labels as symbol
// references, then its chunk metas, the first with absolute times and
// reference, the rest as deltas. Only chunks overlapping [mint, maxt] are
// kept.
func (b *Block) decodeSeries(data []byte, sb *labels.ScratchBuilder, mint, maxt int64) (seriesEntry, error) {
	var e seriesEntry
	d := encoding.Decbuf{B: data}

	sb.Reset()
	for k := d.Uvarint(); k > 0 && d.Err() == nil; k-- {
		nameRef, valueRef := d.Uvarint32(), d.Uvarint32()
		if d.Err() != nil {
			break
		}
		n, err := b.hdr.lookupSymbol(nameRef)
		if err != nil {
			return e, fmt.Errorf("label name: %w", err)
		}
		v, err := b.hdr.lookupSymbol(valueRef)
		if err != nil {
			return e, fmt.Errorf("label value: %w", err)
		}
		sb.Add(n, v)
	}

	var cmint, cmaxt, ref int64
	for i, k := 0, d.Uvarint(); i < k && d.Err() == nil; i++ {
		if i == 0 {
			cmint = d.Varint64()
			cmaxt = cmint + int64(d.Uvarint64())
			ref = int64(d.Uvarint64())
		} else {
			cmint = cmaxt + int64(d.Uvarint64())
			cmaxt = cmint + int64(d.Uvarint64())
			ref += d.Varint64()
		}
		if d.Err() != nil || cmint > maxt {
			break // chunks are in time order
		}
		if cmaxt >= mint {
			e.chks = append(e.chks, chunkMeta{ref: chunks.ChunkRef(ref), mint: cmint, maxt: cmaxt})
		}
	}
	if err := d.Err(); err != nil {
		return e, fmt.Errorf("series entry: %w", err)
	}
	e.lset = sb.Labels()
	return e, nil
}
