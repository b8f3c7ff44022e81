package tsdb

import (
	"container/list"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/aerie-db/aerie/internal/block"
)

// Remote blocks' metadata in memory.
//
// An open remote block keeps its metadata in memory: its label index,
// groups and column metas (what its metadata object held). That grows
// with the history in the bucket, so it is bounded by
// Options.RemoteMetadataBytes: the remote blocks read least recently are
// dropped from memory, each replaced in db.blocks by a block.Unloaded
// stand-in holding its meta only, and opened again from the tier (the
// metadata object, from the tier's local metadata cache where it has one)
// when a read needs them: a querier resolves the stand-ins overlapping
// its range before its first read (Querier.blocksNow), as Thanos' store
// gateway loads the index headers of idle blocks lazily.
//
// The bound counts block.Reader.MemoryBytes of the remote blocks in
// db.blocks; a dropped block's metadata stays in memory while queriers
// that acquired it before still hold it. The block last opened is never
// dropped to make room for itself, so one block larger than the bound
// stays.
//
// Locking: remoteMeta.mu guards its list and sizes; it is taken after
// db.mu (touch runs under db.mu's read lock), never before it.
type remoteMeta struct {
	budget int64 // ≤ 0: unbounded

	mu    sync.Mutex
	lru   list.List // of *remoteEntry, most recently read first
	elems map[*block.Reader]*list.Element
	bytes int64

	loads, drops atomic.Int64
}

type remoteEntry struct {
	r     *block.Reader
	bytes int64
}

// add records loaded remote block r as just read.
func (m *remoteMeta) add(r *block.Reader) {
	n := r.MemoryBytes()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.elems == nil {
		m.elems = map[*block.Reader]*list.Element{}
	}
	if e, ok := m.elems[r]; ok {
		m.lru.MoveToFront(e)
		return
	}
	m.elems[r] = m.lru.PushFront(&remoteEntry{r: r, bytes: n})
	m.bytes += n
}

// touch marks r, if it is a loaded remote block, as just read.
func (m *remoteMeta) touch(r *block.Reader) {
	if !r.Remote() || m.budget <= 0 {
		return
	}
	m.mu.Lock()
	if e, ok := m.elems[r]; ok {
		m.lru.MoveToFront(e)
	}
	m.mu.Unlock()
}

// forget drops r from the accounting (it left db.blocks).
func (m *remoteMeta) forget(r *block.Reader) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.elems[r]; ok {
		m.bytes -= e.Value.(*remoteEntry).bytes
		m.lru.Remove(e)
		delete(m.elems, r)
	}
}

// victim removes and returns the least recently read block if the
// metadata held is over the budget and more than one block holds it.
func (m *remoteMeta) victim() *block.Reader {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.budget <= 0 || m.bytes <= m.budget || m.lru.Len() < 2 {
		return nil
	}
	e := m.lru.Back()
	ent := e.Value.(*remoteEntry)
	m.lru.Remove(e)
	delete(m.elems, ent.r)
	m.bytes -= ent.bytes
	return ent.r
}

// RemoteMetadataStats are the counters of remote blocks' metadata in
// memory.
type RemoteMetadataStats struct {
	Bytes  int64 // block.Reader.MemoryBytes of the remote blocks held
	Loaded int   // remote blocks whose metadata is in memory
	Loads  int64 // remote blocks opened again after they were dropped
	Drops  int64 // remote blocks dropped from memory
}

// RemoteMetadataStats returns the counters of remote blocks' metadata in
// memory.
func (db *DB) RemoteMetadataStats() RemoteMetadataStats {
	m := &db.rmeta
	m.mu.Lock()
	defer m.mu.Unlock()
	return RemoteMetadataStats{Bytes: m.bytes, Loaded: m.lru.Len(), Loads: m.loads.Load(), Drops: m.drops.Load()}
}

// addRemote accounts for loaded remote block r, just placed in db.blocks,
// and drops the least recently read remote blocks beyond the budget.
func (db *DB) addRemote(r *block.Reader) {
	db.rmeta.add(r)
	db.dropRemote()
}

// dropRemote replaces the least recently read remote blocks by stand-ins
// until their metadata fits the budget.
func (db *DB) dropRemote() {
	for {
		v := db.rmeta.victim()
		if v == nil {
			return
		}
		db.mu.Lock()
		i := slices.Index(db.blocks, v)
		if i >= 0 {
			db.blocks[i] = block.Unloaded(v.Meta())
		}
		db.mu.Unlock()
		if i < 0 {
			continue // left db.blocks meanwhile; whoever removed it closed it
		}
		// Queriers that acquired it keep it until they release it.
		v.Close()
		db.rmeta.drops.Add(1)
	}
}

// loadRemote returns, acquired, the block that stand-in u stood for:
// the loaded reader in db.blocks if there is one, else the block opened
// again from the tier and put in place of the stand-in there now (which
// may be another stand-in than u: the block may have been loaded and
// dropped again since u was seen). It returns nil if the block left
// db.blocks (retention).
func (db *DB) loadRemote(ctx context.Context, u *block.Reader) (*block.Reader, error) {
	id := u.Meta().ULID
	// A few rounds: between finding a stand-in and putting the opened
	// block in its place, another read may load and drop the block.
	for round := 0; round < 8; round++ {
		db.mu.RLock()
		var cur *block.Reader
		for _, b := range db.blocks {
			if b.Meta().ULID == id {
				cur = b
				break
			}
		}
		if cur == nil {
			db.mu.RUnlock()
			return nil, nil
		}
		if !cur.IsUnloaded() {
			// In db.blocks, so not closed: drops and retention take it
			// out of db.blocks before they close it.
			ok := cur.Acquire()
			db.rmeta.touch(cur)
			db.mu.RUnlock()
			if ok {
				return cur, nil
			}
			continue
		}
		db.mu.RUnlock()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r, err := db.opts.Remote.Open(ctx, id, db.dict)
		if err != nil {
			return nil, fmt.Errorf("remote tier: open block %s again: %w", id, err)
		}
		db.mu.Lock()
		i := slices.Index(db.blocks, cur)
		if i < 0 {
			db.mu.Unlock()
			r.Close()
			continue
		}
		db.blocks[i] = r
		r.Acquire()
		db.mu.Unlock()
		cur.Close()
		db.rmeta.loads.Add(1)
		db.addRemote(r)
		return r, nil
	}
	return nil, fmt.Errorf("remote tier: block %s was dropped from memory again before a read could use it: raise aerie.storage.metadata_memory_size", id)
}
