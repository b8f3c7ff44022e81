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
// kept in an arena with an index of (time, offset, length). A full arena
// is sorted by (time, record bytes) and written to a run file as
// varint(time) uvarint(len) record; the runs are merged with a heap,
// at most mergeFanIn at a time. So samples come out by time, then series,
// then place in the input: of two samples of one series at one time, the
// one read first comes first.

const (
	maxRunBytes = 1 << 31 // offsets in the arena are uint32
	mergeFanIn  = 64
)

type sortEntry struct {
	t        int64
	off, len uint32
}

type runSorter struct {
	dir     string
	max     int64
	arena   []byte
	entries []sortEntry
	runs    []string
	count   int64 // samples added
	err     error // sticky: a run could not be written
	scratch []byte
}

func newRunSorter(dir string, max int64) *runSorter {
	return &runSorter{dir: dir, max: max}
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
	s.arena = binary.BigEndian.AppendUint32(s.arena, uint32(file))
	s.arena = binary.BigEndian.AppendUint64(s.arena, uint64(line))
	s.arena = binary.LittleEndian.AppendUint64(s.arena, math.Float64bits(v))
	s.entries = append(s.entries, sortEntry{t: t, off: uint32(start), len: uint32(len(s.arena) - start)})
	s.count++
	if int64(len(s.arena))+int64(len(s.entries))*16 >= s.max {
		s.err = s.spill()
	}
}

func (s *runSorter) record(e sortEntry) []byte { return s.arena[e.off : e.off+e.len] }

func (s *runSorter) sort() {
	slices.SortFunc(s.entries, func(a, b sortEntry) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		return bytes.Compare(s.record(a), s.record(b))
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

// merge calls fn for every sample in (time, record) order, then removes
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
		if err := mergeRuns(runs[:mergeFanIn], func(r *sortedSample) error { w.write(r.t, r.rec); return nil }); err != nil {
			return err
		}
		if err := w.close(); err != nil {
			return err
		}
		runs = append(runs[mergeFanIn:], name)
	}
	return mergeRuns(runs, fn)
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

type runHeap []*runReader

func (h runHeap) Len() int { return len(h) }
func (h runHeap) Less(i, j int) bool {
	if h[i].cur.t != h[j].cur.t {
		return h[i].cur.t < h[j].cur.t
	}
	return bytes.Compare(h[i].cur.rec, h[j].cur.rec) < 0
}
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)   { *h = append(*h, x.(*runReader)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// mergeRuns merges run files into fn and removes them.
func mergeRuns(names []string, fn func(*sortedSample) error) (err error) {
	h := make(runHeap, 0, len(names))
	defer func() {
		for _, r := range h {
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
		h = append(h, r)
	}
	heap.Init(&h)
	for len(h) > 0 {
		r := h[0]
		if err := fn(&r.cur); err != nil {
			return err
		}
		ok, err := r.next()
		if err != nil {
			return fmt.Errorf("%s: %w", r.f.Name(), err)
		}
		if ok {
			heap.Fix(&h, 0)
			continue
		}
		r.f.Close()
		heap.Pop(&h)
	}
	return nil
}
