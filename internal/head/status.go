package head

import (
	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/model"
)

// GroupInfo describes one group of the head, for the status API.
type GroupInfo struct {
	ID  model.GroupID
	Key string
	// Series is the number of slots: the series that have joined the
	// group (a series that moved to another group keeps its slot here).
	Series     int
	Partitions int // partitions the group has data in, flushed or not
	Rows       int // in-order rows over those partitions
}

func (g *group) infoLocked() GroupInfo {
	gi := GroupInfo{ID: g.id, Key: g.Key(), Series: len(g.slots), Partitions: len(g.parts)}
	for _, p := range g.parts {
		gi.Rows += p.nRows
	}
	return gi
}

// Groups returns the first limit groups by id and the number of groups.
// It takes each group's lock in turn, never two at once.
func (h *Head) Groups(limit int) (_ []GroupInfo, total int) {
	gs := h.groupList()
	out := make([]GroupInfo, 0, min(limit, len(gs)))
	for _, g := range gs[:min(limit, len(gs))] {
		g.mu.RLock()
		out = append(out, g.infoLocked())
		g.mu.RUnlock()
	}
	return out, len(gs)
}

// SeriesGroups returns the groups the series lset has slots in, in order
// of joining (the last is the one it writes to; a series that was too
// often alone in its rows moves to a group of its own), each with the
// labels of up to limit of its series in slot order (the series itself
// among them); nil if the head holds no series lset.
func (h *Head) SeriesGroups(lset labels.Labels, limit int) []SeriesGroup {
	h.regMu.RLock()
	var gs []*group
	if s := h.findLocked(lset.Hash(), lset); s != nil {
		gs = h.groupsLocked(s, nil)
	}
	h.regMu.RUnlock()
	out := make([]SeriesGroup, 0, len(gs))
	for _, g := range gs { // regMu released first: doc.go's lock order
		g.mu.RLock()
		sg := SeriesGroup{GroupInfo: g.infoLocked(), Members: make([]labels.Labels, 0, min(limit, len(g.slots)))}
		for _, m := range g.slots[:min(limit, len(g.slots))] {
			sg.Members = append(sg.Members, m.labels())
		}
		g.mu.RUnlock()
		out = append(out, sg)
	}
	return out
}

// SeriesGroup is a group of a series (Head.SeriesGroups).
type SeriesGroup struct {
	GroupInfo
	Members []labels.Labels
}

// NumGroupPartitions returns the number of (group, partition) pairs
// holding data in the head: each is one group's rows over one partition,
// what the head stores and flushes as a unit. The status API reports it
// where Prometheus reports its head chunks.
func (h *Head) NumGroupPartitions() int {
	n := 0
	for _, g := range h.groupList() {
		g.mu.RLock()
		n += len(g.parts)
		g.mu.RUnlock()
	}
	return n
}
