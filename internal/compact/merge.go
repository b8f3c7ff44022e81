package compact

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/encoding"
	"github.com/aerie-db/aerie/internal/index"
	"github.com/aerie-db/aerie/internal/seriesiter"
)

// Defaults of Options.
const (
	// DefaultMaxGroupWidth is the head's default group width limit.
	DefaultMaxGroupWidth = 20000
	// DefaultMaxGroupCells bounds rows × series of one output group held
	// in memory: 4 Mi cells are about 36 MiB of values and presence.
	DefaultMaxGroupCells = 1 << 22
)

// Options configure Merge. Zero values take the defaults in brackets.
type Options struct {
	// MinTime and MaxTime are the output block's range [MinTime, MaxTime)
	// [the union of the inputs' ranges]. Every input must lie inside it.
	MinTime, MaxTime int64
	// Level is the output's compaction level [the greatest of the inputs'
	// levels, at least 1].
	Level int
	// TupleSize, BlockTuples and MetricInterval are the output's block
	// parameters [those of inputs[0]].
	TupleSize      int
	BlockTuples    int
	MetricInterval int64
	// GroupKey names the group a series belongs to: series of equal keys
	// share one timestamp column (the engine passes head.GroupKey with its
	// options). Required.
	GroupKey func(labels.Labels) string
	// Deleted returns a series' tombstoned intervals, closed [mint, maxt],
	// in any order; their samples are dropped. Nil: none.
	Deleted func(labels.Labels) [][2]int64
	// DropBefore drops samples with t < DropBefore (past retention). Pass
	// math.MinInt64 to keep every sample; 0 drops those before the epoch.
	DropBefore int64
	// Pace is called after every group written, so the caller can keep
	// the merge within a CPU budget and let queries in. Nil: none.
	Pace func()
	// MaxGroupWidth is the most series of one output group
	// [DefaultMaxGroupWidth]; a wider group is split by label order.
	MaxGroupWidth int
	// MaxGroupCells bounds rows × series of one output group
	// [DefaultMaxGroupCells]: a group with more rows over the output range
	// is written as several groups, each over consecutive rows.
	MaxGroupCells int
}

// sparseDen is the sparse-series threshold: a series present in fewer
// than 1/sparseDen of its group's rows moves to a group of its own.
const sparseDen = 2

// Merge writes the samples of inputs into one new block under parent and
// returns its directory and meta. The output replaces the inputs: it holds
// every sample of theirs except those tombstoned or past retention, its
// Seq and HeadMaxTime are the greatest of theirs, its Backfill is 0, and
// its Compaction names them as parents.
//
// Where several inputs hold a sample of one series at one timestamp, the
// input of the lowest Meta.Seq wins, ties going to the earlier in inputs
// (first write wins; Plan lists a job's inputs in this order).
//
// Series are regrouped over the whole range: those of equal
// opts.GroupKey form one group with one timestamp column, the union of
// their timestamps. Memory holds every input series' labels, and one
// output group at a time: at most opts.MaxGroupCells rows × series of it,
// and per series the encoded column of the input it is being read from
// (of every input that overlaps there, in a vertical merge).
//
// The inputs are acquired for the duration of the call. On error nothing
// is left under parent.
func Merge(parent string, inputs []*block.Reader, dict *index.TagDict, opts Options) (dir string, meta block.Meta, err error) {
	if len(inputs) == 0 {
		return "", block.Meta{}, errors.New("compact: no input blocks")
	}
	if opts.GroupKey == nil {
		return "", block.Meta{}, errors.New("compact: Options.GroupKey is required")
	}
	for i, r := range inputs {
		if !r.Acquire() {
			for _, r := range inputs[:i] {
				r.Release()
			}
			return "", block.Meta{}, fmt.Errorf("compact: input block %s is closed", r.Meta().ULID)
		}
	}
	defer func() {
		for _, r := range inputs {
			r.Release()
		}
	}()
	wopts, err := fillOptions(&opts, inputs)
	if err != nil {
		return "", block.Meta{}, err
	}
	m := &merger{opts: &opts, inputs: inputs}
	groups := m.catalog()
	m.w, err = block.NewWriter(parent, opts.MinTime, opts.MaxTime, dict, wopts)
	if err != nil {
		return "", block.Meta{}, fmt.Errorf("compact: %w", err)
	}
	for _, g := range groups {
		for len(g) > 0 {
			n := min(len(g), opts.MaxGroupWidth)
			if err := m.group(g[:n]); err != nil {
				m.w.Abort()
				return "", block.Meta{}, fmt.Errorf("compact: merge group of %s: %w", g[0].lset, err)
			}
			g = g[n:]
		}
	}
	dir, meta, err = m.w.Finish()
	if err != nil {
		return "", block.Meta{}, fmt.Errorf("compact: %w", err)
	}
	return dir, meta, nil
}

// fillOptions applies the defaults, checks the inputs lie in the output
// range, and returns the writer's options.
func fillOptions(o *Options, inputs []*block.Reader) (block.WriterOptions, error) {
	first := inputs[0].Meta()
	if o.MinTime == 0 && o.MaxTime == 0 {
		o.MinTime, o.MaxTime = math.MaxInt64, math.MinInt64
		for _, r := range inputs {
			o.MinTime = min(o.MinTime, r.Meta().MinTime)
			o.MaxTime = max(o.MaxTime, r.Meta().MaxTime)
		}
	}
	if o.MaxTime <= o.MinTime {
		return block.WriterOptions{}, fmt.Errorf("compact: empty output range [%d, %d)", o.MinTime, o.MaxTime)
	}
	wo := block.WriterOptions{TupleSize: o.TupleSize, BlockTuples: o.BlockTuples, MetricInterval: o.MetricInterval}
	if wo.TupleSize <= 0 {
		wo.TupleSize = first.TupleSize
	}
	if wo.BlockTuples <= 0 {
		wo.BlockTuples = first.BlockTuples
	}
	if wo.MetricInterval <= 0 {
		wo.MetricInterval = first.MetricInterval
	}
	level := 1
	for _, r := range inputs {
		m := r.Meta()
		if m.MinTime < o.MinTime || m.MaxTime > o.MaxTime {
			return block.WriterOptions{}, fmt.Errorf("compact: input block %s [%d, %d) outside output range [%d, %d)",
				m.ULID, m.MinTime, m.MaxTime, o.MinTime, o.MaxTime)
		}
		wo.Seq = max(wo.Seq, m.Seq)
		wo.HeadMaxTime = max(wo.HeadMaxTime, headMaxTime(m))
		level = max(level, m.Compaction.Level)
		wo.Compaction.Parents = append(wo.Compaction.Parents, m.ULID)
	}
	slices.Sort(wo.Compaction.Parents)
	if len(slices.Compact(slices.Clone(wo.Compaction.Parents))) != len(inputs) {
		return block.WriterOptions{}, fmt.Errorf("compact: an input block is given twice")
	}
	if o.Level <= 0 {
		o.Level = level
	}
	wo.Compaction.Level = o.Level
	if o.MaxGroupWidth <= 0 {
		o.MaxGroupWidth = DefaultMaxGroupWidth
	}
	if o.MaxGroupCells <= 0 {
		o.MaxGroupCells = DefaultMaxGroupCells
	}
	return wo, nil
}

// member is one output series: its labels and where the inputs hold it.
type member struct {
	lset labels.Labels
	refs []ref // in precedence order
}

type ref struct {
	input int
	id    uint32
}

type merger struct {
	opts   *Options
	inputs []*block.Reader
	w      *block.Writer

	// Scratch reused across groups; AddGroup does not keep it.
	ts   []int64
	vals [][]float64
	pres [][]bool
	cols []block.Column
}

// catalog reads every input's series labels (index only, no data) and
// returns the output groups, sorted by key, each sorted by labels.
func (m *merger) catalog() [][]*member {
	order := make([]int, len(m.inputs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(m.inputs[a].Meta().Seq, m.inputs[b].Meta().Seq)
	})
	bySeries := map[string]*member{}
	byKey := map[string][]*member{}
	var sb labels.ScratchBuilder
	var buf []byte
	for _, in := range order {
		bi := m.inputs[in].Index()
		for id := 0; id < bi.NumSeries(); id++ {
			lset := bi.Labels(uint32(id), &sb)
			buf = lset.Bytes(buf)
			mem, ok := bySeries[string(buf)]
			if !ok {
				mem = &member{lset: lset}
				bySeries[string(buf)] = mem
				key := m.opts.GroupKey(lset)
				byKey[key] = append(byKey[key], mem)
			}
			mem.refs = append(mem.refs, ref{input: in, id: uint32(id)})
		}
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	groups := make([][]*member, 0, len(keys))
	for _, k := range keys {
		g := byKey[k]
		slices.SortFunc(g, func(a, b *member) int { return labels.Compare(a.lset, b.lset) })
		groups = append(groups, g)
	}
	return groups
}

// stream is one output series' samples: its inputs merged by precedence,
// tombstones and retention applied. Inputs are read a segment at a time
// (those whose ranges overlap, oldest first), so a level merge holds one
// input's column of each series in memory, not all of them.
type stream struct {
	lset labels.Labels
	segs [][]*block.Series // disjoint in time, oldest first; each in precedence order
	it   chunkenc.Iterator // over the segment taken last; nil before the next
	dels [][2]int64        // disjoint, sorted
	ok   bool              // positioned on (t, v)
	t    int64
	v    float64
}

func (s *stream) next() error {
	for {
		if s.it == nil {
			if len(s.segs) == 0 {
				s.ok = false
				return nil
			}
			its := make([]chunkenc.Iterator, len(s.segs[0]))
			for k, ser := range s.segs[0] {
				its[k] = ser.Iterator(nil)
			}
			s.it, s.segs = seriesiter.Merge(its...), s.segs[1:]
		}
		for s.it.Next() == chunkenc.ValFloat {
			t, v := s.it.At()
			for len(s.dels) > 0 && s.dels[0][1] < t {
				s.dels = s.dels[1:]
			}
			if len(s.dels) > 0 && s.dels[0][0] <= t {
				continue
			}
			if s.ok && t <= s.t { // cheap: segments are disjoint in time
				return fmt.Errorf("read series %s: sample at %d after %d", s.lset, t, s.t)
			}
			s.t, s.v, s.ok = t, v, true
			return nil
		}
		if err := s.it.Err(); err != nil {
			s.ok = false
			return fmt.Errorf("read series %s: %w", s.lset, err)
		}
		s.it = nil // drop the segment's column bytes
	}
}

// segments splits a member's input series (in precedence order) into
// groups of inputs whose ranges overlap, transitively, oldest first; each
// keeps precedence order.
func segments(inputs []*block.Reader, mem *member, series []*block.Series) [][]*block.Series {
	idx := make([]int, len(series))
	for k := range idx {
		idx[k] = k
	}
	rng := func(k int) (int64, int64) {
		m := inputs[mem.refs[k].input].Meta()
		return m.MinTime, m.MaxTime
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		am, _ := rng(a)
		bm, _ := rng(b)
		return cmp.Compare(am, bm)
	})
	var out [][]*block.Series
	for i := 0; i < len(idx); {
		_, maxt := rng(idx[i])
		j := i + 1
		for ; j < len(idx); j++ {
			mint, end := rng(idx[j])
			if mint >= maxt {
				break
			}
			maxt = max(maxt, end)
		}
		seg := slices.Clone(idx[i:j])
		slices.Sort(seg) // back to precedence order
		ss := make([]*block.Series, len(seg))
		for x, k := range seg {
			ss[x] = series[k]
		}
		out = append(out, ss)
		i = j
	}
	return out
}

// normIntervals sorts closed intervals and joins those that overlap or
// touch.
func normIntervals(ivs [][2]int64) [][2]int64 {
	if len(ivs) == 0 {
		return nil
	}
	ivs = slices.Clone(ivs)
	slices.SortFunc(ivs, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	out := ivs[:1]
	for _, iv := range ivs[1:] {
		last := &out[len(out)-1]
		if iv[0] <= last[1] || (last[1] != math.MaxInt64 && iv[0] == last[1]+1) {
			last[1] = max(last[1], iv[1])
			continue
		}
		out = append(out, iv)
	}
	return out
}

// group writes the output groups of members (one GroupKey, at most
// MaxGroupWidth series). Rows are assembled in time order across the
// members' streams, at most MaxGroupCells/width of them at a time. A series
// too sparse in a batch of rows (see sparse) leaves the group for the rest
// of the range: its samples so far are kept aside and it is written
// afterwards as a group of its own.
func (m *merger) group(members []*member) error {
	mint := max(m.opts.MinTime, m.opts.DropBefore)
	maxt := m.opts.MaxTime - 1
	sels := make(map[int]*block.Selection)
	pos := make([][]int, len(members)) // member → index in sels[ref.input] per ref
	ids := make(map[int][]uint32)
	for j, mem := range members {
		for _, r := range mem.refs {
			pos[j] = append(pos[j], len(ids[r.input]))
			ids[r.input] = append(ids[r.input], r.id)
		}
	}
	for in, idl := range ids {
		sel, err := m.inputs[in].SelectIDs(mint, maxt, idl)
		if err != nil {
			return err
		}
		sels[in] = sel
	}
	streams := make([]stream, len(members))
	for j, mem := range members {
		ser := make([]*block.Series, len(mem.refs))
		for k, r := range mem.refs {
			ser[k] = &sels[r.input].Series[pos[j][k]]
		}
		s := &streams[j]
		s.lset, s.segs = mem.lset, segments(m.inputs, mem, ser)
		if m.opts.Deleted != nil {
			s.dels = normIntervals(m.opts.Deleted(mem.lset))
		}
		if err := s.next(); err != nil {
			return err
		}
	}

	active := make([]*stream, len(streams))
	for j := range streams {
		active[j] = &streams[j]
	}
	type aside struct {
		s       *stream
		samples []seriesiter.Sample
	}
	var alone []aside
	for len(active) > 0 {
		n, err := m.assemble(active, max(1, min(encoding.MaxRows, m.opts.MaxGroupCells/len(active))))
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
		keep := m.sparse(len(active), n)
		dense := active[:0:0]
		for k, s := range active {
			if keep[k] {
				dense = append(dense, s)
				continue
			}
			a := aside{s: s}
			for i, p := range m.pres[k][:n] {
				if p {
					a.samples = append(a.samples, seriesiter.Sample{T: m.ts[i], V: m.vals[k][i]})
				}
			}
			alone = append(alone, a)
		}
		if len(dense) < len(active) {
			n = m.compactRows(keep, n)
		}
		if err := m.write(dense, keep, n); err != nil {
			return err
		}
		active = dense
	}
	for _, a := range alone {
		if err := m.single(a.s, a.samples); err != nil {
			return err
		}
	}
	return nil
}

// assemble fills m.ts, m.vals and m.pres with up to limit rows: the union
// of the active streams' next timestamps, in order. It returns the rows.
func (m *merger) assemble(active []*stream, limit int) (int, error) {
	for len(m.vals) < len(active) {
		m.vals = append(m.vals, nil)
		m.pres = append(m.pres, nil)
	}
	m.ts = m.ts[:0]
	for k := range active {
		m.vals[k], m.pres[k] = m.vals[k][:0], m.pres[k][:0]
	}
	t := int64(math.MaxInt64)
	found := false
	for _, s := range active {
		if s.ok && (!found || s.t < t) {
			t, found = s.t, true
		}
	}
	for found && len(m.ts) < limit {
		m.ts = append(m.ts, t)
		next, more := int64(math.MaxInt64), false
		for k, s := range active {
			if s.ok && s.t == t {
				m.vals[k] = append(m.vals[k], s.v)
				m.pres[k] = append(m.pres[k], true)
				if err := s.next(); err != nil {
					return 0, err
				}
			} else {
				m.vals[k] = append(m.vals[k], 0)
				m.pres[k] = append(m.pres[k], false)
			}
			if s.ok && (!more || s.t < next) {
				next, more = s.t, true
			}
		}
		t, found = next, more
	}
	return len(m.ts), nil
}

// sparse decides which of the assembled columns stay in the group. From
// the sparsest up, a column leaves while it is present in fewer than
// 1/sparseDen of the rows where some column still in the group is present;
// the first that does not leave keeps itself and every denser column.
// Evicting the sparsest first means a series is not pushed out by rows
// that only other sparse series had.
func (m *merger) sparse(width, n int) []bool {
	keep := make([]bool, width)
	if width == 1 {
		keep[0] = true
		return keep
	}
	counts := make([]int, width)
	perRow := make([]int32, n) // columns present in each row
	for k := range width {
		for i, p := range m.pres[k][:n] {
			if p {
				counts[k]++
				perRow[i]++
			}
		}
	}
	order := make([]int, width)
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(counts[a], counts[b]) })
	rows := n
	for x, k := range order {
		if counts[k]*sparseDen >= rows {
			for _, k := range order[x:] {
				keep[k] = true
			}
			break
		}
		for i, p := range m.pres[k][:n] {
			if p {
				if perRow[i]--; perRow[i] == 0 {
					rows--
				}
			}
		}
	}
	return keep
}

// compactRows drops the rows where no kept column is present, in place; it
// returns the remaining rows.
func (m *merger) compactRows(keep []bool, n int) int {
	out := 0
	for i := 0; i < n; i++ {
		used := false
		for k, kp := range keep {
			if kp && m.pres[k][i] {
				used = true
				break
			}
		}
		if !used {
			continue
		}
		m.ts[out] = m.ts[i]
		for k, kp := range keep {
			if kp {
				m.vals[k][out], m.pres[k][out] = m.vals[k][i], m.pres[k][i]
			}
		}
		out++
	}
	return out
}

// write adds one group: the kept columns of the assembled rows.
func (m *merger) write(dense []*stream, keep []bool, n int) error {
	if n == 0 || len(dense) == 0 {
		return nil
	}
	m.cols = m.cols[:0]
	d := 0
	for k, kp := range keep {
		if !kp {
			continue
		}
		m.cols = append(m.cols, block.Column{Labels: dense[d].lset, Values: m.vals[k][:n], Present: m.pres[k][:n]})
		d++
	}
	if err := m.w.AddGroup(m.ts[:n], m.cols); err != nil {
		return err
	}
	if m.opts.Pace != nil {
		m.opts.Pace()
	}
	return nil
}

// single writes a series that left its group: the samples kept aside,
// then the rest of its stream, as groups of its own.
func (m *merger) single(s *stream, aside []seriesiter.Sample) error {
	limit := min(encoding.MaxRows, m.opts.MaxGroupCells)
	keep := []bool{true}
	for len(aside) > 0 || s.ok {
		m.ts = m.ts[:0]
		m.vals[0], m.pres[0] = m.vals[0][:0], m.pres[0][:0]
		for len(m.ts) < limit && len(aside) > 0 {
			m.ts = append(m.ts, aside[0].T)
			m.vals[0] = append(m.vals[0], aside[0].V)
			m.pres[0] = append(m.pres[0], true)
			aside = aside[1:]
		}
		for len(m.ts) < limit && s.ok {
			m.ts = append(m.ts, s.t)
			m.vals[0] = append(m.vals[0], s.v)
			m.pres[0] = append(m.pres[0], true)
			if err := s.next(); err != nil {
				return err
			}
		}
		if err := m.write([]*stream{s}, keep, len(m.ts)); err != nil {
			return err
		}
	}
	return nil
}

// headMaxTime is the end of the newest head partition in a block; blocks
// written before meta.json had the field were all head flushes.
func headMaxTime(m block.Meta) int64 {
	if m.HeadMaxTime != 0 || m.Seq != 0 || m.Backfill != 0 || m.Compaction.Level != 0 || len(m.Compaction.Parents) != 0 {
		return m.HeadMaxTime
	}
	return m.MaxTime
}
