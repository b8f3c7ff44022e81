package head

import (
	"fmt"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/model"
)

// Join returns the group and slot of the series lset, creating the series
// and assigning its slot if needed. A writer that knows its rows share one
// timestamp (a scrape of one target) joins each series once and then
// appends whole rows with AppendRow.
func (h *Head) Join(lset labels.Labels) (model.GroupID, model.Slot, error) {
	if err := ValidateLabels(lset); err != nil {
		return 0, 0, err
	}
	s, err := h.getOrCreate(lset)
	if err != nil {
		return 0, 0, err
	}
	for {
		h.regMu.RLock()
		g := s.cur
		h.regMu.RUnlock()
		g.appendMu.Lock()
		h.regMu.RLock()
		moved := s.cur != g
		h.regMu.RUnlock()
		if moved {
			g.appendMu.Unlock()
			continue
		}
		var rej AppendError
		slots := h.assignSlots(g, []pending{{s: s}}, &rej)
		g.appendMu.Unlock()
		if rej.Rejected > 0 {
			return 0, 0, rej.Examples[0].Err
		}
		return g.id, slots[s], nil
	}
}

// AppendRow is the group insertion primitive: it stores one row of group
// gid at time t. values and presence are indexed by slot; a slot with
// presence false has no sample in this row (which is not the same as a
// NaN value). It is durable when it returns, like Commit, and returns an
// *AppendError for rejected samples, whose Indexes are their slots.
func (h *Head) AppendRow(gid model.GroupID, t int64, values []float64, presence []bool) error {
	if len(values) != len(presence) {
		return fmt.Errorf("row of group %d: %d values but %d presence flags", gid, len(values), len(presence))
	}
	h.regMu.RLock()
	var g *group
	if int(gid) < len(h.groups) {
		g = h.groups[gid]
	}
	h.regMu.RUnlock()
	if g == nil {
		return fmt.Errorf("row for unknown group %d", gid)
	}
	g.mu.RLock()
	width := len(g.slots)
	pend := make([]pending, 0, len(values))
	for slot, ok := range presence {
		if !ok {
			continue
		}
		if slot >= width {
			g.mu.RUnlock()
			return fmt.Errorf("%w: slot %d of group %d (width %d)", ErrTooManyRows, slot, gid, width)
		}
		pend = append(pend, pending{s: g.slots[slot], t: t, v: values[slot], idx: slot})
	}
	g.mu.RUnlock()
	return h.commitAll(pend, &AppendError{})
}
