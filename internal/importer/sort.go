package importer

import (
	"bufio"
	"bytes"
	"cmp"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
)

// External sort. A sample is encoded as one record:
//
//	uvarint(#labels) {uvarint(len) name uvarint(len) value}… file(4, BE) line(8, BE) value(8, LE bits)
//
// kept in an arena with an index of (time, offset, length, labels
// length). A full arena is sorted and written to a run file as
// varint(time) uvarint(len) record; the runs are merged with a heap, at
// most mergeFanIn at a time. Samples come out by time, then series (the
// labels' bytes), then place in the input, or with bySeries by series,
// then time, then place (history runs: a series' samples one after
// another, in time order); either way, of two samples of one series at
// one time, the one read first comes first.

const (
	maxRunBytes = 1 << 31 // offsets in the arena are uint32
	mergeFanIn  = 64
)

type sortEntry struct {
	t              int64
	off, len, llen uint32 // llen: the labels part's length
}

// entryBytes is what an entry costs beside its record.
const entryBytes = 24

// compareSamples orders two samples (time, record, length of the record's
// labels part) as the sorter does.
func compareSamples(bySeries bool, ta int64, a []byte, la uint32, tb int64, b []byte, lb uint32) int {
	if bySeries {
		if c := bytes.Compare(a[:la], b[:lb]); c != 0 {
			return c
		}
		if c := cmp.Compare(ta, tb); c != 0 {
			return c
		}
		return bytes.Compare(a[la:], b[lb:])
	}
	if c := cmp.Compare(ta, tb); c != 0 {
		return c
	}
	return bytes.Compare(a, b)
}

type runSorter struct {
	dir      string
	max      int64
	bySeries bool // series-major order (see above)
	arena    []byte
	entries  []sortEntry
	runs     []string
	count    int64 // samples added
	err      error // sticky: a run could not be written
	scratch  []byte
}

func newRunSorter(dir string, max int64, bySeries bool) *runSorter {
	return &runSorter{dir: dir, max: max, bySeries: bySeries}
}

func (s *runSorter) add(l labels.Labels, t int64, v float64, file int, line int64) {
	if s.err != nil {
		return
	}
	start := len(s.arena)
	s.arena = binary.AppendUvarint(s.arena, uint64(l.Len()))
	l.Range(func(l labels.Label) {
		s.arena = binary.AppendUvarint(s.arena, uint64(len(l.Name)))
		s.arena = append(s.arena, l.Name...)
		s.arena = binary.AppendUvarint(s.arena, uint64(len(l.Value)))
		s.arena = append(s.arena, l.Value...)
	})
	llen := uint32(len(s.arena) - start)
	s.arena = binary.BigEndian.AppendUint32(s.arena, uint32(file))
	s.arena = binary.BigEndian.AppendUint64(s.arena, uint64(line))
	s.arena = binary.LittleEndian.AppendUint64(s.arena, math.Float64bits(v))
	s.entries = append(s.entries, sortEntry{t: t, off: uint32(start), len: uint32(len(s.arena) - start), llen: llen})
	s.count++
	if int64(len(s.arena))+int64(len(s.entries))*entryBytes >= s.max {
		s.err = s.spill()
	}
}

func (s *runSorter) record(e sortEntry) []byte { return s.arena[e.off : e.off+e.len] }

func (s *runSorter) sort() {
	slices.SortFunc(s.entries, func(a, b sortEntry) int {
		return compareSamples(s.bySeries, a.t, s.record(a), a.llen, b.t, s.record(b), b.llen)
	})
}

// spill writes the arena as a sorted run file.
func (s *runSorter) spill() error {
	s.sort()
	name := filepath.Join(s.dir, fmt.Sprintf("run-%06d", len(s.runs)))
	w, err := newRunWriter(name)
	if err != nil {
		return err
	}
	for _, e := range s.entries {
		w.write(e.t, s.record(e))
	}
	if err := w.close(); err != nil {
		return err
	}
	s.runs = append(s.runs, name)
	s.arena, s.entries = s.arena[:0], s.entries[:0]
	return nil
}

// sortedSample is one sample in merge order.
type sortedSample struct {
	t    int64
	rec  []byte // record; valid until the next sample
	lset []byte // the labels part of rec
	v    float64
	file int
	line int64
}

func (r *sortedSample) decode(t int64, rec []byte) error {
	r.t, r.rec = t, rec
	p := rec
	n, k := binary.Uvarint(p)
	if k <= 0 {
		return errBadRun
	}
	p = p[k:]
	for range 2 * n {
		m, k := binary.Uvarint(p)
		if k <= 0 || uint64(len(p)-k) < m {
			return errBadRun
		}
		p = p[k+int(m):]
	}
	r.lset = rec[:len(rec)-len(p)]
	if len(p) != 20 {
		return errBadRun
	}
	r.file = int(binary.BigEndian.Uint32(p))
	r.line = int64(binary.BigEndian.Uint64(p[4:]))
	r.v = math.Float64frombits(binary.LittleEndian.Uint64(p[12:]))
	return nil
}

var errBadRun = errors.New("corrupt sorted run")

// labelsOf decodes the labels part of a record.
func labelsOf(b []byte, sb *labels.ScratchBuilder) labels.Labels {
	n, k := binary.Uvarint(b)
	b = b[k:]
	sb.Reset()
	for range n {
		m, k := binary.Uvarint(b)
		name := string(b[k : k+int(m)])
		b = b[k+int(m):]
		m, k = binary.Uvarint(b)
		value := string(b[k : k+int(m)])
		b = b[k+int(m):]
		sb.Add(name, value)
	}
	return sb.Labels() // sorted already: the records were made from labels.Labels
}

// merge calls fn for every sample in the sorter's order, then removes
// the runs.
func (s *runSorter) merge(fn func(*sortedSample) error) error {
	if s.err != nil {
		return s.err
	}
	if len(s.runs) == 0 { // everything fit in memory
		s.sort()
		var r sortedSample
		for _, e := range s.entries {
			if err := r.decode(e.t, s.record(e)); err != nil {
				return err
			}
			if err := fn(&r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(s.entries) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	s.arena, s.entries = nil, nil
	runs := s.runs
	for len(runs) > mergeFanIn {
		name := filepath.Join(s.dir, fmt.Sprintf("run-%06d", len(s.runs)))
		s.runs = append(s.runs, name)
		w, err := newRunWriter(name)
		if err != nil {
			return err
		}
		if err := mergeRuns(runs[:mergeFanIn], s.bySeries, func(r *sortedSample) error { w.write(r.t, r.rec); return nil }); err != nil {
			return err
		}
		if err := w.close(); err != nil {
			return err
		}
		runs = append(runs[mergeFanIn:], name)
	}
	return mergeRuns(runs, s.bySeries, fn)
}

type runWriter struct {
	f   *os.File
	bw  *bufio.Writer
	buf []byte
}

func newRunWriter(name string) (*runWriter, error) {
	f, err := os.Create(name)
	if err != nil {
		return nil, fmt.Errorf("sorted run: %w", err)
	}
	return &runWriter{f: f, bw: bufio.NewWriterSize(f, 256<<10)}, nil
}

func (w *runWriter) write(t int64, rec []byte) {
	w.buf = binary.AppendVarint(w.buf[:0], t)
	w.buf = binary.AppendUvarint(w.buf, uint64(len(rec)))
	w.bw.Write(w.buf)
	w.bw.Write(rec) // a write error is sticky in bw and reported by close
}

func (w *runWriter) close() error {
	err := w.bw.Flush()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sorted run %s: %w", w.f.Name(), err)
	}
	return nil
}

// runReader reads one run file.
type runReader struct {
	f   *os.File
	br  *bufio.Reader
	cur sortedSample
	buf []byte
}

func (r *runReader) next() (bool, error) {
	t, err := binary.ReadVarint(r.br)
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	n, err := binary.ReadUvarint(r.br)
	if err != nil || n > maxRunBytes {
		return false, errBadRun
	}
	r.buf = slices.Grow(r.buf[:0], int(n))[:n]
	if _, err := io.ReadFull(r.br, r.buf); err != nil {
		return false, errBadRun
	}
	return true, r.cur.decode(t, r.buf)
}

type runHeap struct {
	rs       []*runReader
	bySeries bool
}

func (h *runHeap) Len() int { return len(h.rs) }
func (h *runHeap) Less(i, j int) bool {
	a, b := &h.rs[i].cur, &h.rs[j].cur
	return compareSamples(h.bySeries, a.t, a.rec, uint32(len(a.lset)), b.t, b.rec, uint32(len(b.lset))) < 0
}
func (h *runHeap) Swap(i, j int) { h.rs[i], h.rs[j] = h.rs[j], h.rs[i] }
func (h *runHeap) Push(x any)    { h.rs = append(h.rs, x.(*runReader)) }
func (h *runHeap) Pop() any {
	x := h.rs[len(h.rs)-1]
	h.rs = h.rs[:len(h.rs)-1]
	return x
}

// mergeRuns merges run files into fn and removes them.
func mergeRuns(names []string, bySeries bool, fn func(*sortedSample) error) (err error) {
	h := &runHeap{rs: make([]*runReader, 0, len(names)), bySeries: bySeries}
	defer func() {
		for _, r := range h.rs {
			r.f.Close()
		}
		for _, name := range names {
			if rerr := os.Remove(name); err == nil && rerr != nil {
				err = rerr
			}
		}
	}()
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		r := &runReader{f: f, br: bufio.NewReaderSize(f, 64<<10)}
		ok, err := r.next()
		if err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", name, err)
		}
		if !ok {
			f.Close()
			continue
		}
		h.rs = append(h.rs, r)
	}
	heap.Init(h)
	for h.Len() > 0 {
		r := h.rs[0]
		if err := fn(&r.cur); err != nil {
			return err
		}
		ok, err := r.next()
		if err != nil {
			return fmt.Errorf("%s: %w", r.f.Name(), err)
		}
		if ok {
			heap.Fix(h, 0)
			continue
		}
		r.f.Close()
		heap.Pop(h)
	}
	return nil
}
