package head

import (
	"fmt"

	"github.com/aerie-db/aerie/internal/memory"
)

// MinBlockSize is the least memory block size the head accepts: the
// largest encoded tuple (8 timestamps with 10-byte varint deltas, or 8
// values in XOR case 3) must fit in one block.
const MinBlockSize = 128

// chain is a sequence of encoded tuples kept in the memory manager's
// blocks of one partition (Heracles' in-memory tuples: the head's tuple
// memory lives in the manager's pages, not in Go slices). Tuple k starts at
// byte offs[k] of the chain, that is in block offs[k]/blockSize at
// offs[k]%blockSize, and never crosses a block: a tuple that does not fit
// in the rest of the last block starts a new one, and the rest stays unused.
//
// A chain is written under its group's write lock; its blocks are live
// blocks of its partition, so they are valid while the partition is in the
// head (the head removes a partition from its groups before it
// hard-releases it). Readers copy a view under the read lock.
type chain struct {
	refs []memory.Ref
	offs []uint32
	fill int // bytes used in the last block
}

// append stores one encoded tuple (at most MinBlockSize bytes).
func (c *chain) append(m *memory.Manager, pid int64, enc []byte) {
	bs := m.BlockSize()
	if len(c.refs) == 0 || c.fill+len(enc) > bs {
		id, v, err := m.Alloc(pid)
		if err != nil {
			// Rows are applied only after Reserve succeeded for their
			// partition, and the head's manager overcommits rather than
			// fail: an error here is a broken invariant.
			panic(fmt.Sprintf("head: memory for partition %d: %v", pid, err))
		}
		c.refs = append(c.refs, memory.MakeRef(id, v))
		c.fill = 0
	}
	b := m.Data(c.refs[len(c.refs)-1])
	c.offs = append(c.offs, uint32((len(c.refs)-1)*bs+c.fill))
	c.fill += copy(b[c.fill:], enc)
}

// skip records an empty tuple: its offset is never read.
func (c *chain) skip() { c.offs = append(c.offs, 0) }

// view returns a copy of the chain's headers for a reader. Called with the
// group's lock held.
func (c *chain) view() chainView {
	return chainView{refs: c.refs[:len(c.refs):len(c.refs)], offs: c.offs[:len(c.offs):len(c.offs)], fill: c.fill}
}

// bytes returns the memory held: whole blocks, the refs and the offsets.
func (c *chain) bytes(bs int) int64 {
	return int64(len(c.refs)*(bs+8) + 4*len(c.offs))
}

// chainView is a reader's immutable view of a chain.
type chainView struct {
	refs []memory.Ref
	offs []uint32
	fill int
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
// block is never written again.
func (v *chainView) tuple(m *memory.Manager, k int) []byte {
	bs := m.BlockSize()
	off := int(v.offs[k])
	b, in := off/bs, off%bs
	d := m.Data(v.refs[b])
	if b == len(v.refs)-1 {
		return d[in:v.fill]
	}
	return d[in:]
}
