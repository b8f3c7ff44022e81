package head

import (
	"fmt"

	"github.com/aerie-db/aerie/internal/memory"
)

// MinBlockSize and MaxBlockSize bound the memory block size the head
// accepts: the largest encoded tuple (8 timestamps with 10-byte varint
// deltas, or 8 values in XOR case 3) must fit in one block, and a tuple's
// offset within its block is one byte.
const (
	MinBlockSize = 128
	MaxBlockSize = 256
)

// chain is a sequence of encoded tuples kept in the memory manager's
// blocks of one partition (Heracles' in-memory tuples: the head's tuple
// memory lives in the manager's pages, not in Go slices). Block b holds
// tuples starts[b] to starts[b+1]-1; tuple k starts at byte offs[k] of its
// block and never crosses it: a tuple that does not fit in the rest of the
// last block starts a new one, and the rest stays unused. Empty tuples
// (skip) take an offset entry that is never read.
//
// A chain is written under its group's write lock; its blocks are live
// blocks of its partition, so they are valid while the partition is in the
// head (the head removes a partition from its groups before it
// hard-releases it). Readers copy a view under the read lock.
type chain struct {
	refs   []memory.Ref
	starts []uint32 // per block: its first tuple
	offs   []uint8  // per tuple: offset in its block
	fill   int      // bytes used in the last block
}

// append stores one encoded tuple (at most MinBlockSize bytes).
func (c *chain) append(m *memory.Manager, pid int64, enc []byte) {
	if len(c.refs) == 0 || c.fill+len(enc) > m.BlockSize() {
		id, v, err := m.Alloc(pid)
		if err != nil {
			// Rows are applied only after Reserve succeeded for their
			// partition, and the head's manager overcommits rather than
			// fail: an error here is a broken invariant.
			panic(fmt.Sprintf("head: memory for partition %d: %v", pid, err))
		}
		c.refs = append(c.refs, memory.MakeRef(id, v))
		c.starts = append(c.starts, uint32(len(c.offs)))
		c.fill = 0
	}
	b := m.Data(c.refs[len(c.refs)-1])
	c.offs = append(c.offs, uint8(c.fill))
	c.fill += copy(b[c.fill:], enc)
}

// skip records an empty tuple.
func (c *chain) skip() { c.offs = append(c.offs, 0) }

// view returns a copy of the chain's headers for a reader. Called with the
// group's lock held.
func (c *chain) view() chainView {
	return chainView{
		refs:   c.refs[:len(c.refs):len(c.refs)],
		starts: c.starts[:len(c.starts):len(c.starts)],
		offs:   c.offs[:len(c.offs):len(c.offs)],
		fill:   c.fill,
	}
}

// bytes returns the memory held: whole blocks, the refs, block starts and
// offsets.
func (c *chain) bytes(bs int) int64 {
	return int64(len(c.refs)*(bs+8+4) + len(c.offs))
}

// chainView is a reader's immutable view of a chain.
type chainView struct {
	refs   []memory.Ref
	starts []uint32
	offs   []uint8
	fill   int
}

// valid reports whether every block of the view is still visible. The
// caller holds a memory guard entered before the check; blocks found valid
// stay intact until it exits.
func (v *chainView) valid(m *memory.Manager) bool {
	for _, r := range v.refs {
		if !m.Valid(r) {
			return false
		}
	}
	return true
}

// tuple returns the bytes from tuple k's start to what is written of its
// block: the tuple is a prefix. Bytes past the view's fill in the last
// block may be being written, so they are left out; the rest of an earlier
// block is never written again. k must not be a skipped tuple.
func (v *chainView) tuple(m *memory.Manager, k int) []byte {
	// The block holding k: the last one starting at or before it.
	lo, hi := 0, len(v.starts)
	for hi-lo > 1 {
		mid := int(uint(lo+hi) >> 1)
		if int(v.starts[mid]) <= k {
			lo = mid
		} else {
			hi = mid
		}
	}
	b := lo
	d := m.Data(v.refs[b])
	in := int(v.offs[k])
	if b == len(v.refs)-1 {
		return d[in:v.fill]
	}
	return d[in:]
}
