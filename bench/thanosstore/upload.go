package thanosstore

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/oklog/ulid/v2"
	"github.com/thanos-io/objstore"
)

// Names inside a block, in its directory and under its bucket prefix.
const (
	metaFilename  = "meta.json"
	indexFilename = "index"
	chunksDirname = "chunks"
)

// blockMeta is the part of a prometheus/tsdb meta.json this package reads.
type blockMeta struct {
	ULID    string `json:"ulid"`
	MinTime int64  `json:"minTime"`
	MaxTime int64  `json:"maxTime"` // exclusive
	Version int    `json:"version"`
	Stats   struct {
		NumTombstones uint64 `json:"numTombstones"`
	} `json:"stats"`
}

// parseMeta decodes and checks a meta.json read from name.
func parseMeta(name string, b []byte) (blockMeta, error) {
	var m blockMeta
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("parse %s: %w", name, err)
	}
	if m.Version != 1 {
		return m, fmt.Errorf("%s: meta version %d, only 1 is known", name, m.Version)
	}
	if _, err := ulid.ParseStrict(m.ULID); err != nil {
		return m, fmt.Errorf("%s: ulid %q: %w", name, m.ULID, err)
	}
	if m.MinTime >= m.MaxTime {
		return m, fmt.Errorf("%s: minTime %d is not below maxTime %d", name, m.MinTime, m.MaxTime)
	}
	return m, nil
}

// blockPrefix is where block id lives under prefix in a bucket.
func blockPrefix(prefix, id string) string {
	return path.Join(prefix, id)
}

// Upload copies a prometheus/tsdb block directory (meta.json, index,
// chunks/NNNNNN) to bkt under prefix+"/"+ulid+"/" as is, where ulid is the
// block's ID from its meta.json, which must also be the directory's name.
// Like Thanos' block.Upload it sends chunks first and meta.json last, so
// that a block whose meta.json is visible is complete, and it refuses a
// block with tombstones, which a reader of the uploaded files would not see.
// An empty prefix puts the block at the bucket's root.
func Upload(ctx context.Context, bkt objstore.Bucket, prefix, blockDir string) error {
	metaPath := filepath.Join(blockDir, metaFilename)
	mb, err := os.ReadFile(metaPath)
	if err != nil {
		return fmt.Errorf("upload block: %w", err)
	}
	meta, err := parseMeta(metaPath, mb)
	if err != nil {
		return fmt.Errorf("upload block: %w", err)
	}
	if base := filepath.Base(filepath.Clean(blockDir)); base != meta.ULID {
		return fmt.Errorf("upload block %s: directory name %q is not the block's ULID", blockDir, base)
	}
	if meta.Stats.NumTombstones > 0 {
		return fmt.Errorf("upload block %s: %d tombstones; compact them away first", meta.ULID, meta.Stats.NumTombstones)
	}
	dst := blockPrefix(prefix, meta.ULID)

	segs, err := os.ReadDir(filepath.Join(blockDir, chunksDirname))
	if err != nil {
		return fmt.Errorf("upload block %s: %w", meta.ULID, err)
	}
	var files []string
	for _, e := range segs {
		if e.Type().IsRegular() {
			files = append(files, path.Join(chunksDirname, e.Name()))
		}
	}
	sort.Strings(files)
	files = append(files, indexFilename, metaFilename)

	for _, f := range files {
		if err := uploadFile(ctx, bkt, filepath.Join(blockDir, filepath.FromSlash(f)), path.Join(dst, f)); err != nil {
			return fmt.Errorf("upload block %s: %w", meta.ULID, err)
		}
	}
	return nil
}

func uploadFile(ctx context.Context, bkt objstore.Bucket, src, dst string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := bkt.Upload(ctx, dst, f); err != nil {
		return fmt.Errorf("upload %s to %s: %w", src, dst, err)
	}
	return nil
}
