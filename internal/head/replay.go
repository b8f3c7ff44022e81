package head

import (
	"fmt"
	"math/bits"

	"github.com/aerie-db/aerie/internal/model"
	"github.com/aerie-db/aerie/internal/wal"
)

// The Replay methods rebuild the head from WAL records, in WAL order. They
// run before the head serves appends and queries.

// ReplayGroup defines a group.
func (h *Head) ReplayGroup(d wal.GroupDef) {
	h.regMu.Lock()
	defer h.regMu.Unlock()
	if int(d.ID) < len(h.groups) && h.groups[d.ID] != nil {
		return
	}
	g := h.newGroupLocked(d.ID, d.Key)
	g.loggedDef = true
}

// ReplaySeries defines a series and its slot in a group; a series seen
// again in another group has moved there.
func (h *Head) ReplaySeries(d wal.SeriesDef) error {
	h.regMu.Lock()
	defer h.regMu.Unlock()
	if int(d.Group) >= len(h.groups) || h.groups[d.Group] == nil {
		return fmt.Errorf("series %d refers to undefined group %d", d.Ref, d.Group)
	}
	g := h.groups[d.Group]
	for int(d.Ref) >= len(h.refs) {
		h.refs = append(h.refs, nil)
	}
	s := h.refs[d.Ref]
	if s == nil {
		s = h.newSeriesLocked(d.Ref, d.Labels, d.Labels.Hash(), g)
		h.refs[d.Ref] = s
		h.publishRefsLocked()
	} else {
		h.joinLocked(s, g)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.slotOfLocked(s); ok {
		return nil
	}
	if int(d.Slot) != len(g.slots) {
		return fmt.Errorf("series %d: slot %d of group %d out of sequence (group has %d)", d.Ref, d.Slot, d.Group, len(g.slots))
	}
	g.addSlotLocked(s)
	g.loggedSlots = len(g.slots)
	return nil
}

// ReplayRows applies the rows of a record. Rows below the minimum valid
// time (already in blocks) are skipped.
func (h *Head) ReplayRows(rd *wal.RowsDef) error {
	h.regMu.RLock()
	var g *group
	if int(rd.Group) < len(h.groups) {
		g = h.groups[rd.Group]
	}
	h.regMu.RUnlock()
	if g == nil {
		return fmt.Errorf("rows for undefined group %d", rd.Group)
	}
	g.mu.RLock()
	width := len(g.slots)
	slots := g.slots
	g.mu.RUnlock()
	minValid := h.minValid.Load()
	rows := make([]row, 0, len(rd.Rows))
	for _, r := range rd.Rows {
		if r.T < minValid {
			continue
		}
		rw := row{t: r.T, vals: r.Values}
		for w, word := range r.Present {
			for word != 0 {
				b := trailingZeros(word)
				word &= word - 1
				slot := w*64 + b
				if slot >= width {
					return fmt.Errorf("rows of group %d: slot %d beyond width %d", rd.Group, slot, width)
				}
				rw.slots = append(rw.slots, model.Slot(slot))
				rw.series = append(rw.series, slots[slot])
			}
		}
		if len(rw.slots) != len(rw.vals) {
			return fmt.Errorf("rows of group %d at %d: %d present slots but %d values", rd.Group, r.T, len(rw.slots), len(rw.vals))
		}
		if err := h.reserve(h.partitionOf(r.T)); err != nil {
			return fmt.Errorf("rows of group %d at %d: %w", rd.Group, r.T, err)
		}
		// The record's slices are reused by the decoder: copy values.
		rw.vals = append([]float64(nil), rw.vals...)
		rows = append(rows, rw)
	}
	g.appendMu.Lock()
	h.applyRows(g, rows, nil)
	g.appendMu.Unlock()
	return nil
}

func trailingZeros(x uint64) int { return bits.TrailingZeros64(x) }

// Defs calls fn with the records that define every group and every slot
// of the head, groups first, then slots in group order (so a moved series'
// last definition is its current group). A WAL checkpoint holds them.
func (h *Head) Defs(fn func(rec []byte) error) error {
	gs := h.groupList()
	defs := make([]wal.GroupDef, 0, len(gs))
	for _, g := range gs {
		defs = append(defs, wal.GroupDef{ID: g.id, Key: g.Key()})
	}
	if len(defs) > 0 {
		if err := fn(wal.AppendGroups(nil, defs)); err != nil {
			return err
		}
	}
	for _, g := range gs {
		g.mu.RLock()
		sds := make([]wal.SeriesDef, len(g.slots))
		for i, s := range g.slots {
			sds[i] = wal.SeriesDef{Ref: s.ref, Group: g.id, Slot: model.Slot(i), Labels: s.labels()}
		}
		g.mu.RUnlock()
		if len(sds) > 0 {
			if err := fn(wal.AppendSeries(nil, sds)); err != nil {
				return err
			}
		}
	}
	return nil
}
