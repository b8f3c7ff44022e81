package tsdb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/compact"
	"github.com/aerie-db/aerie/internal/index"
)

// Remote is a second tier holding blocks: package bucket's object
// storage, wired in by the server.
//
// Blocks whose data are all older than Options.LocalRetention (counted
// from the newest data) are uploaded by the background loop, verified by
// the tier. At open, the tier's blocks that are not in the data directory
// are opened from the tier and serve queries like local ones (a node
// with an empty data directory serves the tier's history). Remote blocks
// are never compacted. Once uploaded, a block's local copy is deleted and
// queries read it from the tier. Retention deletes from the tier too.
type Remote interface {
	// SyncTagDict brings dict up to the tier's dictionary before any of
	// its blocks is opened, so that codes agree.
	SyncTagDict(ctx context.Context, dict *index.TagDict) error
	// List returns the ULIDs of the tier's complete blocks.
	List(ctx context.Context) ([]string, error)
	// Open opens one of them for reading.
	Open(ctx context.Context, ulid string, dict *index.TagDict) (*block.Reader, error)
	// Upload copies the local block in dir into the tier and checks
	// every object it wrote; a block already there is checked again.
	Upload(ctx context.Context, dir string, dict *index.TagDict) error
	// Delete removes a block from the tier (retention).
	Delete(ctx context.Context, ulid string) error
}

// openRemote opens the tier's blocks missing locally (and not replaced by
// a compaction, local or remote). Called at open, before blocks serve
// queries.
func (db *DB) openRemote(ctx context.Context) error {
	r := db.opts.Remote
	if r == nil {
		return nil
	}
	if err := r.SyncTagDict(ctx, db.dict); err != nil {
		return fmt.Errorf("remote tier: tag dictionary: %w", err)
	}
	ids, err := r.List(ctx)
	if err != nil {
		return fmt.Errorf("remote tier: %w", err)
	}
	local := map[string]bool{}
	var metas []block.Meta
	for _, b := range db.blocks {
		local[b.Meta().ULID] = true
		metas = append(metas, b.Meta())
	}
	// Newest ULIDs first: while the metadata fits the budget, blocks stay
	// open; the rest are stand-ins, opened when read (remotemeta.go).
	var opened []*block.Reader
	var held int64
	ids = slices.Clone(ids)
	slices.Sort(ids)
	slices.Reverse(ids)
	for _, id := range ids {
		if local[id] {
			continue
		}
		b, err := r.Open(ctx, id, db.dict)
		var damaged interface{ Corrupted() bool }
		if errors.As(err, &damaged) && damaged.Corrupted() {
			// Like a corrupt local block (quarantined), it is skipped and
			// counted; the rest serve.
			db.quarantined.Add(1)
			db.log.Warn("remote tier: block skipped, its metadata is damaged", "block", id, "err", err)
			continue
		}
		if err != nil {
			for _, o := range opened {
				o.Close()
			}
			return fmt.Errorf("remote tier: open block %s: %w", id, err)
		}
		if n := b.MemoryBytes(); db.rmeta.budget > 0 && len(opened) > 0 && held+n > db.rmeta.budget {
			meta := b.Meta()
			b.Close()
			b = block.Unloaded(meta)
		} else {
			held += n
		}
		opened = append(opened, b)
		metas = append(metas, b.Meta())
	}
	obsolete := compact.Obsolete(metas)
	db.mu.Lock()
	var kept []*block.Reader
	for _, b := range opened {
		if slices.Contains(obsolete, b.Meta().ULID) {
			b.Close()
			continue
		}
		db.blocks = append(db.blocks, b)
		db.noteBlockLocked(b.Meta())
		kept = append(kept, b)
	}
	sortBlocks(db.blocks)
	db.mu.Unlock()
	for _, b := range kept {
		if !b.IsUnloaded() {
			db.addRemote(b)
		}
	}
	return nil
}

// shipBlocks uploads the local blocks whose data are all older than the
// local retention, counted back from the newest data, then swaps each for
// its remote copy and deletes the local one. The tier reads every object
// back before Upload returns, so the local copy goes only once the bucket
// holds the block whole. A crash in between leaves both; the next round
// finds the block uploaded (checked again in full) and goes on.
func (db *DB) shipBlocks(ctx context.Context) error {
	r := db.opts.Remote
	if r == nil {
		return nil
	}
	if err := db.tierDeletes(ctx); err != nil {
		return err
	}
	newest := db.newestT()
	if newest == math.MinInt64 {
		return nil
	}
	// No compaction may delete a block while it is swapped (compaction.go
	// takes the same lock for its whole round).
	db.compactMu.Lock()
	defer db.compactMu.Unlock()
	cutoff := newest - db.opts.LocalRetention
	// A block a compaction would still merge (overlapping blocks of an
	// upload of history, a level window not yet merged) stays local until
	// it is merged: the bucket gets the compacted block, not its inputs
	// (which take more bytes, and several sources per interval make value
	// search read data).
	merging := map[string]bool{}
	for _, j := range db.planCompactions(0) {
		for _, id := range j.Inputs {
			merging[id] = true
		}
	}
	db.mu.RLock()
	var due []*block.Reader
	for _, b := range db.blocks {
		m := b.Meta()
		if m.MaxTime <= cutoff && !b.Remote() && !merging[m.ULID] && b.Acquire() {
			due = append(due, b)
		}
	}
	db.mu.RUnlock()
	defer func() {
		for _, b := range due {
			b.Release()
		}
	}()
	for _, b := range due {
		id := b.Meta().ULID
		if err := r.Upload(ctx, b.Dir(), db.dict); err != nil {
			db.shipFailures.Add(1)
			return fmt.Errorf("upload block %s: %w", id, err)
		}
		rb, err := r.Open(ctx, id, db.dict)
		if err != nil {
			db.shipFailures.Add(1)
			return fmt.Errorf("open uploaded block %s: %w", id, err)
		}
		db.mu.Lock()
		i := slices.Index(db.blocks, b)
		if i < 0 { // deleted meanwhile (retention)
			db.mu.Unlock()
			rb.Close()
			continue
		}
		db.blocks[i] = rb
		db.mu.Unlock()
		db.addRemote(rb)
		// Queriers hold their own references; the files close with the
		// last one, and unlinked files stay readable until then.
		b.Close()
		if err := removeDir(b.Dir()); err != nil {
			return fmt.Errorf("delete local copy of uploaded block %s: %w", id, err)
		}
		db.shippedBlocks.Add(1)
		db.log.Info("block moved to the remote tier", "block", id, "mint", b.Meta().MinTime, "maxt", b.Meta().MaxTime)
	}
	return nil
}

// localBlocks returns the metas of the open local blocks, oldest first.
func (db *DB) localBlocks() []block.Meta {
	db.mu.RLock()
	defer db.mu.RUnlock()
	var out []block.Meta
	for _, b := range db.blocks {
		if !b.Remote() {
			out = append(out, b.Meta())
		}
	}
	return out
}

// ShipBlocks uploads the blocks due for the remote tier now (the
// background loop does it after each compaction round).
func (db *DB) ShipBlocks(ctx context.Context) error { return db.shipBlocks(ctx) }

// queueTierDelete records that retention dropped remote block id; the
// compaction loop deletes it from the tier (tierDeletes). A block whose
// delete never ran (a crash) is opened again at the next start and
// dropped by retention again.
func (db *DB) queueTierDelete(id string) {
	db.tierMu.Lock()
	db.tierDrop = append(db.tierDrop, id)
	db.tierMu.Unlock()
}

// tierDeletes deletes the queued blocks from the tier; a failed one stays
// queued.
func (db *DB) tierDeletes(ctx context.Context) error {
	db.tierMu.Lock()
	ids := db.tierDrop
	db.tierDrop = nil
	db.tierMu.Unlock()
	for i, id := range ids {
		if err := db.opts.Remote.Delete(ctx, id); err != nil {
			db.tierMu.Lock()
			db.tierDrop = append(db.tierDrop, ids[i:]...)
			db.tierMu.Unlock()
			return fmt.Errorf("retention: delete block %s from the remote tier: %w", id, err)
		}
		db.log.Info("block deleted from the remote tier by retention", "block", id)
	}
	return nil
}

// RemoteStats are the remote tier's counters.
type RemoteStats struct {
	Blocks        int   // open blocks read from the tier
	ShippedBlocks int64 // local blocks moved to the tier since open
	ShipFailures  int64 // failed uploads (retried next round)
	// UploadLag is how long, in data time (ms), the oldest local block
	// due for the tier has been due (0: none).
	UploadLag      int64
	PendingDeletes int // remote blocks retention dropped, not yet deleted from the tier
}

// RemoteStats returns the remote tier's counters.
func (db *DB) RemoteStats() RemoteStats {
	st := RemoteStats{ShippedBlocks: db.shippedBlocks.Load(), ShipFailures: db.shipFailures.Load()}
	newest := db.newestT()
	cutoff := newest - db.opts.LocalRetention
	db.mu.RLock()
	for _, b := range db.blocks {
		switch m := b.Meta(); {
		case b.Remote():
			st.Blocks++
		case db.opts.Remote != nil && newest != math.MinInt64 && m.MaxTime <= cutoff:
			st.UploadLag = max(st.UploadLag, cutoff-m.MaxTime)
		}
	}
	db.mu.RUnlock()
	db.tierMu.Lock()
	st.PendingDeletes = len(db.tierDrop)
	db.tierMu.Unlock()
	return st
}
