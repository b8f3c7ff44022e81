package thanosstore

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
)

// samples are the samples of one chunk that fall in the query's range.
type samples struct {
	t []int64
	v []float64
}

// loadChunks fetches the chunks of entries in one phase: per segment, the
// chunks sorted by offset are grouped into parts reading
// estimatedMaxChunkSize bytes past each chunk's start, as Thanos'
// bucketChunkReader.load does. It decodes them and returns, per entry and
// chunk, the samples in [mint, maxt].
func (b *Block) loadChunks(ctx context.Context, entries []seriesEntry, mint, maxt int64) ([][]samples, error) {
	type load struct {
		off           int64
		series, chunk int
	}
	loads := make([][]load, len(b.chunkObjs))
	out := make([][]samples, len(entries))
	for si, e := range entries {
		out[si] = make([]samples, len(e.chks))
		for ci, c := range e.chks {
			seq, off := chunks.BlockChunkRef(c.ref).Unpack()
			if seq >= len(b.chunkObjs) || b.chunkObjs[seq] == "" {
				return nil, corruptf(b.hdr.name, e.off, "chunk reference %#x: the block has no segment %06d", uint64(c.ref), seq+1)
			}
			if off < chunks.SegmentHeaderSize {
				return nil, corruptf(b.hdr.name, e.off, "chunk reference %#x: offset %d is inside the segment header", uint64(c.ref), off)
			}
			loads[seq] = append(loads[seq], load{off: int64(off), series: si, chunk: ci})
		}
	}

	type job struct {
		seq int
		p   part
	}
	var jobs []job
	for seq, ls := range loads {
		slices.SortFunc(ls, func(a, b load) int { return cmp.Compare(a.off, b.off) })
		for _, p := range partition(len(ls), b.maxGap, func(i int) (int64, int64) {
			return ls[i].off, ls[i].off + b.chunkEst
		}) {
			jobs = append(jobs, job{seq: seq, p: p})
		}
	}

	err := runPhase(ctx, b.stats, len(jobs), func(ctx context.Context, i int) (int, error) {
		j := jobs[i]
		name := b.chunkObjs[j.seq]
		buf, err := getRange(ctx, b.bkt, name, j.p.start, j.p.end-j.p.start, &b.stats.Gets, &b.stats.BytesFetched)
		if err != nil {
			return 1, err
		}
		chain := 1
		ended := int64(len(buf)) < j.p.end-j.p.start
		var it chunkenc.Iterator
		for _, l := range loads[j.seq][j.p.first:j.p.last] {
			payload, gets, err := b.fetchRecord(ctx, name, l.off, from(buf, l.off-j.p.start), ended, 1)
			chain += gets
			if err != nil {
				return chain, err
			}
			b.stats.BytesNeeded.Add(int64(len(payload)))
			s, err := decodeXOR(payload, &it, mint, maxt)
			if err != nil {
				return chain, fmt.Errorf("chunk in %s at offset %d: %w", name, l.off, err)
			}
			out[l.series][l.chunk] = s
		}
		return chain, nil
	})
	return out, err
}

// decodeXOR decodes a chunk's payload, its encoding byte then its data,
// keeping the samples in [mint, maxt]. Only float (XOR) chunks are
// supported. *it is reused and replaced.
func decodeXOR(payload []byte, it *chunkenc.Iterator, mint, maxt int64) (samples, error) {
	var s samples
	if enc := chunkenc.Encoding(payload[0]); enc != chunkenc.EncXOR {
		return s, fmt.Errorf("encoding %s: only XOR (float sample) chunks are supported", enc)
	}
	chk, err := chunkenc.FromData(chunkenc.EncXOR, payload[1:])
	if err != nil {
		return s, err
	}
	*it = chk.Iterator(*it)
	for (*it).Next() == chunkenc.ValFloat {
		t, v := (*it).At()
		if t > maxt {
			break
		}
		if t >= mint {
			s.t = append(s.t, t)
			s.v = append(s.v, v)
		}
	}
	if err := (*it).Err(); err != nil {
		return s, fmt.Errorf("decode XOR chunk: %w", err)
	}
	return s, nil
}
