package tsdb

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/block"
)

// Read-only views of the engine's state for the status API
// (internal/api's /status/aerie/...). None of them changes anything.

// QuarantinedBlocks returns the names of the directories in the
// quarantine directory: blocks moved aside because they could not be read
// (this process's and earlier ones'), sorted.
func (db *DB) QuarantinedBlocks() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(db.dir, quarantineDirname))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// WALStatus describes the write-ahead log on disk.
type WALStatus struct {
	FirstSegment, LastSegment int // 0, 0: no segment
	Files                     int // segments and checkpoints
	Bytes                     int64
}

// WAL returns the WAL's segment range and the files and bytes of its
// directory.
func (db *DB) WAL() (WALStatus, error) {
	var st WALStatus
	var err error
	if st.FirstSegment, st.LastSegment, err = db.wal.Segments(); err != nil {
		return st, err
	}
	err = filepath.WalkDir(db.wal.Dir(), func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) { // removed by a truncation meanwhile
			return nil
		}
		if err != nil {
			return err
		}
		st.Files++
		st.Bytes += info.Size()
		return nil
	})
	return st, err
}

// SeriesBlocks returns the metas of the first limit blocks, oldest first,
// that hold the series lset (exactly these labels), and the number of
// such blocks. It reads the blocks' label indexes only.
func (db *DB) SeriesBlocks(lset labels.Labels, limit int) (_ []block.Meta, total int) {
	db.mu.RLock()
	bs := slices.Clone(db.blocks)
	db.mu.RUnlock()
	var out []block.Meta
	sb := labels.NewScratchBuilder(lset.Len())
	for _, b := range bs {
		if b.IsUnloaded() {
			// A remote block dropped from memory: opened again to be
			// looked at, as a query would.
			lb, err := db.loadRemote(context.Background(), b)
			if err != nil || lb == nil {
				db.log.Warn("series blocks: remote block not opened", "block", b.Meta().ULID, "err", err)
				continue
			}
			b = lb
		} else if !b.Acquire() {
			continue // closed by a compaction or retention meanwhile
		}
		if blockHolds(b, lset, &sb) {
			if total < limit {
				out = append(out, b.Meta())
			}
			total++
		}
		b.Release()
	}
	return out, total
}

func blockHolds(b *block.Reader, lset labels.Labels, sb *labels.ScratchBuilder) bool {
	bi := b.Index()
	ids := bi.AllPostings()
	lset.Range(func(l labels.Label) {
		if !ids.IsEmpty() {
			ids.And(bi.Postings(l.Name, l.Value))
		}
	})
	for it := ids.Iterator(); it.HasNext(); {
		if labels.Equal(bi.Labels(it.Next(), sb), lset) {
			return true
		}
	}
	return false
}

// RemoteBlocks returns the ULIDs of the open blocks read from the bucket
// tier.
func (db *DB) RemoteBlocks() map[string]bool {
	db.mu.RLock()
	defer db.mu.RUnlock()
	out := map[string]bool{}
	for _, b := range db.blocks {
		if b.Remote() {
			out[b.Meta().ULID] = true
		}
	}
	return out
}
