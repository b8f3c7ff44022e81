package thanosstore

import (
	"context"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"

	"github.com/thanos-io/objstore"
)

// Thanos' per-series and per-chunk read estimates and its series batch
// (pkg/store/bucket.go). The store gateway lowers the estimates to the
// maxima its compactor recorded in meta.json's "thanos" section, where
// present; a Prometheus meta.json has no such section, so these apply.
const (
	// estimatedMaxSeriesSize is how many index bytes are read from the
	// start of each series entry: Thanos' EstimatedMaxSeriesSize.
	estimatedMaxSeriesSize = 64 * 1024
	// estimatedMaxChunkSize is how many segment bytes are read from the
	// start of each chunk: Thanos' EstimatedMaxChunkSize.
	estimatedMaxChunkSize = 16000
	// seriesBatchSize is how many postings the series and chunks phases
	// take at a time: Thanos' SeriesBatchSize.
	seriesBatchSize = 10000
)

// Block is one uploaded block opened the way the store gateway opens it: its
// meta.json, the listing of its chunk segments, and its index-header, all
// read once by OpenBlock and kept in memory. A Block is immutable and safe
// for concurrent use.
type Block struct {
	bkt   objstore.BucketReader
	stats *Stats
	id    string
	meta  blockMeta
	hdr   *indexHeader
	// chunkObjs[seq] is the segment object chunk references with sequence
	// number seq point into (chunks/%06d of seq+1), "" where missing.
	chunkObjs []string

	// Read estimates, partitioner gap and series batch: Thanos'
	// constants, smaller in tests that exercise re-fetches and batches.
	seriesEst, chunkEst, maxGap int64
	batchSize                   int
}

// OpenBlock opens block ulid under prefix in bkt. It reads meta.json, lists
// chunks/, and builds the index-header from range GETs of the index; all of
// it is counted in stats.MetaGets and stats.MetaBytes. Select counts its
// requests in the same stats. A nil stats counts into a private Stats.
func OpenBlock(ctx context.Context, bkt objstore.BucketReader, prefix, ulid string, stats *Stats) (*Block, error) {
	if stats == nil {
		stats = new(Stats)
	}
	dir := blockPrefix(prefix, ulid)
	b := &Block{
		bkt:       bkt,
		stats:     stats,
		id:        ulid,
		seriesEst: estimatedMaxSeriesSize,
		chunkEst:  estimatedMaxChunkSize,
		maxGap:    partitionerMaxGap,
		batchSize: seriesBatchSize,
	}

	metaName := path.Join(dir, metaFilename)
	mb, err := b.getAll(ctx, metaName)
	if err != nil {
		return nil, fmt.Errorf("open block %s: %w", ulid, err)
	}
	if b.meta, err = parseMeta(metaName, mb); err != nil {
		return nil, fmt.Errorf("open block %s: %w", ulid, err)
	}
	if b.meta.ULID != ulid {
		return nil, fmt.Errorf("open block %s: %s names block %s", ulid, metaName, b.meta.ULID)
	}

	if err := b.listChunks(ctx, path.Join(dir, chunksDirname)); err != nil {
		return nil, fmt.Errorf("open block %s: %w", ulid, err)
	}

	if b.hdr, err = loadIndexHeader(ctx, bkt, path.Join(dir, indexFilename), stats); err != nil {
		return nil, fmt.Errorf("open block %s: %w", ulid, err)
	}
	return b, nil
}

// MinTime is the block's first millisecond, inclusive.
func (b *Block) MinTime() int64 { return b.meta.MinTime }

// MaxTime is the block's end, exclusive, as in prometheus/tsdb's meta.json.
func (b *Block) MaxTime() int64 { return b.meta.MaxTime }

// getAll GETs a whole object, counted as metadata.
func (b *Block) getAll(ctx context.Context, name string) ([]byte, error) {
	b.stats.MetaGets.Add(1)
	rc, err := b.bkt.Get(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", name, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	b.stats.MetaBytes.Add(int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return data, nil
}

// listChunks lists the segment objects under dir, one request, as Thanos
// lists a block's chunks/ when it loads the block.
func (b *Block) listChunks(ctx context.Context, dir string) error {
	b.stats.MetaGets.Add(1)
	err := b.bkt.Iter(ctx, dir, func(name string) error {
		n, err := strconv.Atoi(path.Base(name))
		if err != nil || n < 1 || strings.HasSuffix(name, "/") {
			return nil // not a segment
		}
		if n > 1<<20 {
			return fmt.Errorf("segment %s: sequence number %d is implausibly large", name, n)
		}
		for len(b.chunkObjs) < n {
			b.chunkObjs = append(b.chunkObjs, "")
		}
		b.chunkObjs[n-1] = name
		return nil
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	if len(b.chunkObjs) == 0 {
		return fmt.Errorf("list %s: no chunk segments", dir)
	}
	return nil
}
