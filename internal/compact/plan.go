package compact

import (
	"cmp"
	"slices"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/mathx"
)

// Level range multipliers: the first level above the partition is six
// partitions (12 h of 2 h), every further level four of the one below.
const (
	firstFactor = 6
	levelFactor = 4
)

// Ranges returns the time range of each level in ms: base (level 0, the
// head partition), base×6, then ×4 repeatedly while the range is at most
// max. Level k's windows are [i·r_k, (i+1)·r_k), aligned to epoch 0.
func Ranges(base, max int64) []int64 {
	if base <= 0 {
		return nil
	}
	rs := []int64{base}
	for r, f := base, int64(firstFactor); r <= max/f; f = levelFactor {
		r *= f
		rs = append(rs, r)
	}
	return rs
}

// Job is one compaction: merge the blocks Inputs into one block of range
// [MinTime, MaxTime) at level Level. Inputs are in precedence order (Seq,
// then ULID, which sorts by creation time): pass their readers to Merge in
// this order.
type Job struct {
	Inputs           []string
	MinTime, MaxTime int64
	Level            int
}

// unit is what the level pass sees: a block not in any job yet, or the
// output of a job already planned (which no window may take this round).
type unit struct {
	mint, maxt int64
	planned    bool
	meta       *block.Meta
}

// Plan returns the compactions to run now, oldest first; no block is in
// two jobs. ranges come from Ranges; horizon is the newest data time minus
// a guard: a level window is compacted only if it ends at or before it.
//
//   - Vertical: every set of blocks whose [MinTime, MaxTime) overlap,
//     transitively, is one job over the union of their ranges, whatever
//     the horizon (overlaps slow every query that touches them). Its level
//     is the greatest of its inputs', at least 1: level 0 is reserved for
//     flushed blocks.
//   - Levels: for k ≥ 1, a window of range ranges[k] is one job of level k
//     if it ends at or before horizon, at least two blocks lie in it, and
//     every block or planned output that overlaps it lies entirely inside
//     it and is not planned yet. So an output never overlaps a block it
//     does not replace, and a window whose smaller windows were planned
//     this round waits for the next. Blocks larger than a window or
//     crossing its edges stay until a larger window holds them.
//
// The caller leaves out blocks it must not touch (an unfinished backfill
// generation's, blocks being deleted).
func Plan(metas []block.Meta, ranges []int64, horizon int64) []Job {
	ms := slices.Clone(metas)
	slices.SortFunc(ms, func(a, b block.Meta) int {
		return cmp.Or(cmp.Compare(a.MinTime, b.MinTime), cmp.Compare(a.MaxTime, b.MaxTime), cmp.Compare(a.ULID, b.ULID))
	})
	var jobs []Job
	var units []unit
	for i := 0; i < len(ms); {
		j, maxt := i+1, ms[i].MaxTime
		for j < len(ms) && ms[j].MinTime < maxt {
			maxt = max(maxt, ms[j].MaxTime)
			j++
		}
		if j-i == 1 {
			units = append(units, unit{mint: ms[i].MinTime, maxt: ms[i].MaxTime, meta: &ms[i]})
		} else {
			level := 1
			for _, m := range ms[i:j] {
				level = max(level, m.Compaction.Level)
			}
			jobs = append(jobs, newJob(ms[i:j], ms[i].MinTime, maxt, level))
			units = append(units, unit{mint: ms[i].MinTime, maxt: maxt, planned: true})
		}
		i = j
	}
	for k := 1; k < len(ranges); k++ {
		r := ranges[k]
		out := units[:0:0]
		for i := 0; i < len(units); {
			ws := mathx.FloorDiv(units[i].mint, r) * r
			we := ws + r
			j := i
			for j < len(units) && units[j].mint < we {
				j++
			}
			ok := j-i >= 2 && we <= horizon && (len(out) == 0 || out[len(out)-1].maxt <= ws)
			for _, u := range units[i:j] {
				ok = ok && !u.planned && u.maxt <= we
			}
			if !ok {
				out = append(out, units[i:j]...)
				i = j
				continue
			}
			in := make([]block.Meta, 0, j-i)
			for _, u := range units[i:j] {
				in = append(in, *u.meta)
			}
			jobs = append(jobs, newJob(in, ws, we, k))
			out = append(out, unit{mint: ws, maxt: we, planned: true})
			i = j
		}
		units = out
	}
	slices.SortFunc(jobs, func(a, b Job) int {
		return cmp.Or(cmp.Compare(a.MinTime, b.MinTime), cmp.Compare(a.MaxTime, b.MaxTime))
	})
	return jobs
}

func newJob(in []block.Meta, mint, maxt int64, level int) Job {
	in = slices.Clone(in)
	slices.SortFunc(in, func(a, b block.Meta) int {
		return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.ULID, b.ULID))
	})
	j := Job{MinTime: mint, MaxTime: maxt, Level: level}
	for _, m := range in {
		j.Inputs = append(j.Inputs, m.ULID)
	}
	return j
}

// Obsolete returns, sorted, the ULIDs of blocks that are parents of
// another existing block: their data are in it, so the engine deletes them
// (at open, and before planning if a deletion failed). A compaction output
// is renamed into place only when complete, so an existing output whose
// parents, all or some, still exist means the process stopped between
// that rename and the inputs' deletion. Lineage is read from existing
// metas only; since a block is compacted again only after its parents are
// gone, a chain A → B → C with all three present makes A and B obsolete.
func Obsolete(metas []block.Meta) []string {
	exists := make(map[string]bool, len(metas))
	for _, m := range metas {
		exists[m.ULID] = true
	}
	var out []string
	for _, m := range metas {
		for _, p := range m.Compaction.Parents {
			if exists[p] && p != m.ULID {
				out = append(out, p)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
