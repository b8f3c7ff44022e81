package head

import (
	"fmt"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/model"
	"github.com/aerie-db/aerie/internal/wal"
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
		ps := []pending{{s: s}}
		h.assignSlots(g, ps, &rej)
		g.appendMu.Unlock()
		if rej.Rejected > 0 {
			return 0, 0, rej.Examples[0].Err
		}
		return g.id, ps[0].slot, nil
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
	if err := h.appendRowFast(g, t, values, presence); err != errRetry {
		return err
	}
	// A series of the row moved to a group of its own: the general path
	// splits the row by group.
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
	return h.commitAll(pend, &AppendError{}, nil, nil)
}

// appendRowFast commits one row of g when every present slot's series
// still belongs to g (errRetry otherwise, before anything is validated or
// written). It is commit's path for a single group and row, without
// commit's per-sample maps and sort: the slots are known and unique. As
// commit, it waits for its WAL record's fsync after unlocking the group.
func (h *Head) appendRowFast(g *group, t int64, values []float64, presence []bool) (err error) {
	var ticket uint64 // the WAL's; waited for after the unlock below (defers run last first)
	defer func() {
		if ticket != 0 {
			if werr := h.wal.Wait(ticket); err == nil {
				err = werr
			}
		}
	}()
	g.appendMu.Lock()
	defer g.appendMu.Unlock()
	n := 0
	for _, ok := range presence {
		if ok {
			n++
		}
	}
	r := row{t: t, slots: make([]model.Slot, 0, n), vals: make([]float64, 0, n), series: make([]*memSeries, 0, n), idx: make([]int, 0, n)}
	g.mu.RLock()
	width := len(g.slots)
	for slot, ok := range presence {
		if !ok {
			continue
		}
		if slot >= width {
			g.mu.RUnlock()
			return fmt.Errorf("%w: slot %d of group %d (width %d)", ErrTooManyRows, slot, g.id, width)
		}
		r.series = append(r.series, g.slots[slot])
	}
	g.mu.RUnlock()
	h.regMu.RLock()
	for _, s := range r.series {
		if s.cur != g {
			h.regMu.RUnlock()
			return errRetry
		}
	}
	h.regMu.RUnlock()

	lim := h.limits()
	rej := &AppendError{}
	all := r.series
	r.series = r.series[:0]
	i := 0
	for slot, ok := range presence {
		if !ok {
			continue
		}
		s, v := all[i], values[slot]
		i++
		dup, err := lim.check(t, v, s.lastT.Load(), s.lastV.Load())
		if dup {
			rej.Accepted++ // identical to the stored sample
			continue
		}
		if err != nil {
			rej.add(slot, s.labels(), t, err)
			continue
		}
		r.slots = append(r.slots, model.Slot(slot))
		r.vals = append(r.vals, v)
		r.series = append(r.series, s)
		r.idx = append(r.idx, slot)
	}
	rows := []row{r}
	if len(r.slots) > 0 {
		rows = h.reserveRows(rows, rej, nil)
	}
	if len(rows) > 0 {
		moves := h.trackMisfits(g, rows)
		if h.wal != nil {
			recs := g.appendDefsLocked(nil, width)
			recs = append(recs, wal.AppendRows(nil, rowsRecord(g.id, width, rows)))
			tk, err := h.wal.Write(t, recs...)
			if err != nil {
				return err
			}
			ticket = tk
			g.loggedDef = true
			g.mu.RLock()
			g.loggedSlots = len(g.slots)
			g.mu.RUnlock()
		}
		h.applyRows(g, rows, rej)
		if len(moves) > 0 {
			h.moveSeries(moves)
		}
	}
	if rej.Rejected > 0 {
		return rej
	}
	return nil
}
