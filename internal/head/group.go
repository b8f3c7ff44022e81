package head

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/encoding"
	"github.com/aerie-db/aerie/internal/invariants"
	"github.com/aerie-db/aerie/internal/memory"
	"github.com/aerie-db/aerie/internal/model"
)

// MaxTupleSize bounds Options.TupleSize: presence of a tuple is one byte.
const MaxTupleSize = 8

// group is one Heracles group: series written together, sharing one
// timestamp column per partition.
type group struct {
	id model.GroupID
	// key is the group's GroupKey, or "" in a tag-set group whose tags
	// were set at its creation: its key is then theirs (Key), not kept
	// twice (it was 15 B a TSBS series). Never changed.
	key string
	// tags are the labels but __name__ its members share, in a tag-set
	// group (GroupKey's "t:" keys): set at its creation from its key, or
	// else with its first member, under Head.regMu, then never changed
	// (memSeries.tags points here).
	tags *labels.Labels

	// appendMu serializes commits into the group, from validation through
	// the WAL write to the application, so WAL order equals apply order.
	// It is never held by readers.
	appendMu    sync.Mutex
	loggedDef   bool // guarded by appendMu: the GroupDef is in the WAL
	loggedSlots int  // guarded by appendMu: slots [0,loggedSlots) have SeriesDefs in the WAL

	// mu guards the fields below. Writers hold it (exclusively) only while
	// applying rows; readers hold it (shared) only to snapshot.
	mu    sync.RWMutex
	slots []*memSeries // slot → series, append-only
	// slotIdx maps series → slot once the group is wider than
	// slotScanMax; a narrower group finds a slot by scanning slots
	// (cheaper than a map's lookup, and no map per small group).
	slotIdx map[*memSeries]model.Slot
	// parts are the group's partitions, in no order: a few at a time
	// (the head's window), so a scan finds one, and a slice costs a
	// fraction of a map's memory in a group of a few series.
	parts []*gpart
}

// newGroup returns an empty group of key. A tag-set group keeps its tags
// instead of its key.
func newGroup(id model.GroupID, key string) *group {
	g := &group{id: id, key: key}
	if tags, ok := parseTagSetKey(key); ok {
		g.key, g.tags = "", &tags
	}
	return g
}

// Key returns the group's GroupKey. It allocates for a tag-set group.
func (g *group) Key() string {
	if g.key == "" && g.tags != nil {
		return tagSetKey(*g.tags)
	}
	return g.key
}

// hasKey reports whether key is the group's GroupKey, without allocating.
func (g *group) hasKey(key string) bool {
	if g.key == "" && g.tags != nil {
		return isTagSetKey(key, *g.tags)
	}
	return g.key == key
}

// tagSet reports whether g is a tag-set group (GroupKey's "t:" keys).
func (g *group) tagSet() bool {
	return (g.key == "" && g.tags != nil) || strings.HasPrefix(g.key, keyTagSet)
}

// part returns partition pid of g, or nil. Called with g.mu held.
func (g *group) part(pid int64) *gpart {
	for _, p := range g.parts {
		if p.pid == pid {
			return p
		}
	}
	return nil
}

// dropPart removes partition pid from g. Called with g.mu held
// exclusively.
func (g *group) dropPart(pid int64) {
	g.parts = slices.DeleteFunc(g.parts, func(p *gpart) bool { return p.pid == pid })
}

// slotScanMax is the widest group whose slots are found by a scan.
const slotScanMax = 16

// slotOfLocked returns the slot of s in g. Called with g.mu held.
func (g *group) slotOfLocked(s *memSeries) (model.Slot, bool) {
	if g.slotIdx != nil {
		slot, ok := g.slotIdx[s]
		return slot, ok
	}
	for i, m := range g.slots {
		if m == s {
			return model.Slot(i), true
		}
	}
	return 0, false
}

// addSlotLocked gives s the next slot of g. Called with g.mu held for
// writing.
func (g *group) addSlotLocked(s *memSeries) model.Slot {
	slot := model.Slot(len(g.slots))
	g.slots = append(g.slots, s)
	switch {
	case g.slotIdx != nil:
		g.slotIdx[s] = slot
	case len(g.slots) > slotScanMax:
		g.slotIdx = make(map[*memSeries]model.Slot, 2*len(g.slots))
		for i, m := range g.slots {
			g.slotIdx[m] = model.Slot(i)
		}
	}
	return slot
}

// gpart is the data of one group in one time partition.
type gpart struct {
	pid int64
	// flushed is set (under group.mu) when the partition is in a block:
	// its blocks are hot, it takes no more rows, and it serves queries
	// until it is dropped or its blocks are reclaimed.
	flushed bool

	// Closed time tuples: all full (tupleSize rows). The first 8 bytes of
	// a time tuple are its raw first timestamp.
	times chain
	enc   []byte // scratch for encoding a tuple; guarded by group.mu

	openT [MaxTupleSize]int64 // rows of the open (not yet full) tuple
	openN int

	lastT      int64 // timestamp of the last in-order row
	minT, maxT int64 // over every sample, in-order and out-of-order
	nRows      int   // in-order rows
	cols       []*column
}

// column is one slot's values in one group partition. It is 80 bytes
// (TestColumnSize): what a series written once holds. A column exists only
// once the slot has a sample in the partition. Its closed tuples and its
// out-of-order samples are allocated when it first has some.
type column struct {
	open       [MaxTupleSize]float64
	ext        *colExtra // nil until a tuple with a value of the slot closes or an out-of-order sample arrives
	firstTuple int32     // closed tuples before it have no values for this slot
	openPres   uint8
}

// colExtra holds a column's closed tuples from its firstTuple and its
// out-of-order samples.
type colExtra struct {
	vals chain    // per closed tuple: value tuple (a placeholder if empty)
	pres []uint8  // per closed tuple: presence bits
	base float64  // the first closed value (the tuples' XOR base), set with pres[0]
	ooo  []sample // out-of-order samples, sorted by t, unique t
}

// oooSamples returns the column's out-of-order samples.
func (c *column) oooSamples() []sample {
	if c.ext == nil {
		return nil
	}
	return c.ext.ooo
}

type sample struct {
	t int64
	v float64
}

func newGPart(pid int64) *gpart {
	return &gpart{pid: pid, lastT: math.MinInt64, minT: math.MaxInt64, maxT: math.MinInt64}
}

func (p *gpart) numClosed() int { return len(p.times.offs) }

func (p *gpart) col(slot model.Slot) *column {
	for int(slot) >= len(p.cols) {
		p.cols = append(p.cols, nil)
	}
	c := p.cols[slot]
	if c == nil {
		c = &column{firstTuple: int32(p.numClosed())}
		p.cols[slot] = c
	}
	return c
}

// closeTupleLocked encodes the full open tuple into m's blocks. Called
// with group.mu held.
func (p *gpart) closeTupleLocked(m *memory.Manager) {
	p.enc = encoding.AppendTimeTuple(p.enc[:0], p.openT[:p.openN])
	p.times.append(m, p.pid, p.enc)
	var vals [MaxTupleSize]float64
	for _, c := range p.cols {
		if c == nil {
			continue
		}
		if c.ext == nil || len(c.ext.pres) == 0 {
			if c.openPres == 0 {
				c.firstTuple++ // still no values: nothing to keep
				continue
			}
			if c.ext == nil {
				c.ext = new(colExtra)
			}
		}
		cv := c.ext
		first := len(cv.pres) == 0
		cv.pres = append(cv.pres, c.openPres)
		if c.openPres == 0 {
			cv.vals.skip()
		} else {
			n := 0
			for i := 0; i < p.openN; i++ {
				if c.openPres&(1<<i) != 0 {
					vals[n] = c.open[i]
					n++
				}
			}
			if first {
				cv.base = vals[0]
			}
			p.enc = encoding.AppendValueTuple(p.enc[:0], cv.base, vals[:n])
			if invariants.Enabled {
				checkValueTuple(p.enc, cv.base, vals[:n])
			}
			cv.vals.append(m, p.pid, p.enc)
		}
		c.openPres = 0
	}
	p.openN = 0
}

// appendRowLocked appends an in-order row (t > lastT).
func (p *gpart) appendRowLocked(m *memory.Manager, t int64, slots []model.Slot, vals []float64, tupleSize int) {
	if t <= p.lastT {
		panic(fmt.Sprintf("head: in-order row at %d after %d", t, p.lastT)) // callers route older rows to the out-of-order buffer
	}
	if p.openN == tupleSize {
		p.closeTupleLocked(m)
	}
	i := p.openN
	p.openT[i] = t
	p.openN++
	for j, s := range slots {
		c := p.col(s)
		c.open[i] = vals[j]
		c.openPres |= 1 << i
	}
	p.lastT = t
	p.nRows++
	p.widen(t)
}

func (p *gpart) widen(t int64) {
	if t < p.minT {
		p.minT = t
	}
	if t > p.maxT {
		p.maxT = t
	}
}

// lookupLocked returns the value a slot holds at t, if any. Called with
// group.mu held: the partition's blocks are live.
func (p *gpart) lookupLocked(m *memory.Manager, slot model.Slot, t int64, tupleSize int) (float64, bool) {
	if int(slot) >= len(p.cols) || p.cols[slot] == nil {
		return 0, false
	}
	c := p.cols[slot]
	ooo := c.oooSamples()
	if i := sort.Search(len(ooo), func(i int) bool { return ooo[i].t >= t }); i < len(ooo) && ooo[i].t == t {
		return ooo[i].v, true
	}
	if p.openN > 0 && t >= p.openT[0] {
		for i := 0; i < p.openN; i++ {
			if p.openT[i] == t {
				if c.openPres&(1<<i) != 0 {
					return c.open[i], true
				}
				return 0, false
			}
		}
		return 0, false
	}
	// Binary search over closed tuples by their raw first timestamp.
	tv := p.times.view()
	k := sort.Search(p.numClosed(), func(k int) bool { return tupleFirst(tv.tuple(m, k)) > t }) - 1
	cv := c.ext
	if cv == nil || k < int(c.firstTuple) || k < 0 || k-int(c.firstTuple) >= len(cv.pres) {
		return 0, false
	}
	var tsBuf [MaxTupleSize]int64
	ts, _, err := encoding.DecodeTimeTuple(tsBuf[:0], tv.tuple(m, k), tupleSize)
	if err != nil {
		return 0, false
	}
	pres := cv.pres[k-int(c.firstTuple)]
	idx := -1
	for i, tt := range ts {
		if tt == t {
			idx = i
			break
		}
	}
	if idx < 0 || pres&(1<<idx) == 0 {
		return 0, false
	}
	var vBuf [MaxTupleSize]float64
	vv := cv.vals.view()
	vs, _, err := encoding.DecodeValueTuple(vBuf[:0], vv.tuple(m, k-int(c.firstTuple)), cv.base, bits.OnesCount8(pres))
	if err != nil {
		return 0, false
	}
	return vs[bits.OnesCount8(pres&(1<<idx-1))], true
}

// tupleFirst returns the raw first timestamp of an encoded time tuple.
func tupleFirst(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) }

// insertOOO stores an out-of-order sample; the caller has checked that no
// sample is stored at t. Called with group.mu held.
func (c *column) insertOOO(t int64, v float64) {
	if c.ext == nil {
		c.ext = new(colExtra)
	}
	ooo := c.ext.ooo
	i := sort.Search(len(ooo), func(i int) bool { return ooo[i].t >= t })
	ooo = append(ooo, sample{})
	copy(ooo[i+1:], ooo[i:])
	ooo[i] = sample{t, v}
	c.ext.ooo = ooo
}

// checkValueTuple decodes a freshly encoded tuple and panics if it differs
// bit for bit from what was encoded (invariants builds only).
func checkValueTuple(enc []byte, base float64, vals []float64) {
	got, _, err := encoding.DecodeValueTuple(nil, enc, base, len(vals))
	if err != nil {
		panic(fmt.Sprintf("head: value tuple does not decode: %v", err))
	}
	for i := range vals {
		if math.Float64bits(got[i]) != math.Float64bits(vals[i]) {
			panic(fmt.Sprintf("head: value tuple round trip: value %d is %x, wrote %x", i, math.Float64bits(got[i]), math.Float64bits(vals[i])))
		}
	}
}
