// Package spool holds a load's points between reading and storing them:
// in memory up to a limit, then in an unlinked temporary file, so memory
// stays bounded whatever the input's size. Sensor uploads (internal/sensor)
// and aerie import's sensor files (internal/importer) read a whole input
// into a Spool before they store any of it, and learn on the way whether
// it is in time order, so a history run can take it as it is.
//
// Invariants:
//  1. Next gives the points back in the order Add took them (after
//     SortMem, in time order), each once, with its row when the Spool
//     keeps rows.
//  2. Memory holds at most MemMax points; the rest are in the file, 16
//     bytes a point (24 with rows), removed from the directory at once so
//     that no crash leaves it behind.
//  3. Sorted is true only if the points, as Next gives them, are strictly
//     increasing in time.
package spool

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
)

// Spool is a sequence of points; the zero value with MemMax set is ready.
// Not safe for concurrent use.
type Spool struct {
	Dir    string // of the temporary file ("": os.TempDir)
	MemMax int    // points held in memory
	Rows   bool   // keep each point's row (Add's row, given back by Iter.Row)

	mem [][]point // chunks of chunkPoints (no copy as they grow)
	nm  int       // points in mem
	f   *os.File
	w   *bufio.Writer
	n   int64
	// notSorted: a point was not after the one before; last is the time
	// of the last point added.
	notSorted bool
	last      int64
	min, max  int64
	dups      int64
}

type point struct {
	t   int64
	v   float64
	row int64
}

// chunkPoints is the length of a memory chunk (192 KiB).
const chunkPoints = 8192

// Len is the number of points.
func (s *Spool) Len() int64 { return s.n }

// Sorted reports whether the points are strictly increasing in time.
func (s *Spool) Sorted() bool { return !s.notSorted }

// MinTime and MaxTime are the least and greatest times (of no points: 0).
func (s *Spool) MinTime() int64 { return s.min }
func (s *Spool) MaxTime() int64 { return s.max }

// Dups is the number of points SortMem dropped as repeats.
func (s *Spool) Dups() int64 { return s.dups }

// Add appends a point read from row (ignored without Rows).
func (s *Spool) Add(t int64, v float64, row int64) error {
	if s.n == 0 {
		s.min, s.max = t, t
	} else {
		if t <= s.last {
			s.notSorted = true
		}
		s.min, s.max = min(s.min, t), max(s.max, t)
	}
	s.last = t
	s.n++
	if s.nm < s.MemMax {
		if s.nm%chunkPoints == 0 {
			s.mem = append(s.mem, make([]point, 0, min(chunkPoints, s.MemMax-s.nm)))
		}
		c := &s.mem[len(s.mem)-1]
		*c = append(*c, point{t, v, row})
		s.nm++
		return nil
	}
	if s.f == nil {
		f, err := os.CreateTemp(s.Dir, "spool-*")
		if err != nil {
			return fmt.Errorf("spool: %w", err)
		}
		_ = os.Remove(f.Name()) // the open file outlives its name
		s.f, s.w = f, bufio.NewWriterSize(f, 1<<20)
	}
	var b [24]byte
	binary.LittleEndian.PutUint64(b[:], uint64(t))
	binary.LittleEndian.PutUint64(b[8:], math.Float64bits(v))
	n := 16
	if s.Rows {
		binary.LittleEndian.PutUint64(b[16:], uint64(row))
		n = 24
	}
	if _, err := s.w.Write(b[:n]); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	return nil
}

// SortMem sorts points held in memory alone (none in the file) by time,
// keeping the order of points at one time, and drops a point repeating
// the time and value of the one before; two values at one time are an
// error. With points in the file it does nothing: Sorted stays as it is.
func (s *Spool) SortMem() error {
	if !s.notSorted || s.f != nil {
		return nil
	}
	all := make([]point, 0, s.nm)
	for _, c := range s.mem {
		all = append(all, c...)
	}
	slices.SortStableFunc(all, func(a, b point) int { return cmp.Compare(a.t, b.t) })
	out := all[:1]
	for _, p := range all[1:] {
		last := out[len(out)-1]
		if p.t != last.t {
			out = append(out, p)
			continue
		}
		if math.Float64bits(p.v) != math.Float64bits(last.v) {
			return fmt.Errorf("two values at timestamp %d: %v and %v", p.t, last.v, p.v)
		}
		s.dups++
	}
	s.mem, s.nm = [][]point{out}, len(out)
	s.n = int64(len(out))
	s.notSorted = false
	return nil
}

// Iter starts reading the points from the first; the Spool takes no Add
// after it.
func (s *Spool) Iter() (*Iter, error) {
	it := &Iter{s: s}
	if s.f != nil {
		if err := s.w.Flush(); err != nil {
			return nil, fmt.Errorf("spool: %w", err)
		}
		if _, err := s.f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("spool: %w", err)
		}
		it.r = bufio.NewReaderSize(s.f, 1<<20)
	}
	return it, nil
}

// Close releases the file.
func (s *Spool) Close() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// Iter reads a Spool's points.
type Iter struct {
	s    *Spool
	c, i int // next point in memory: chunk, index
	r    *bufio.Reader
	p    point
	err  error
	back bool // Next gives p again (Unread)
}

// At is the current point.
func (it *Iter) At() (int64, float64) { return it.p.t, it.p.v }

// Row is the current point's row (with Rows).
func (it *Iter) Row() int64 { return it.p.row }

// Err is what ended the points early.
func (it *Iter) Err() error { return it.err }

// Unread makes Next give the current point again.
func (it *Iter) Unread() { it.back = true }

// Next moves to the next point.
func (it *Iter) Next() bool {
	if it.back {
		it.back = false
		return true
	}
	if it.c < len(it.s.mem) {
		c := it.s.mem[it.c]
		it.p = c[it.i]
		if it.i++; it.i == len(c) {
			it.c, it.i = it.c+1, 0
		}
		return true
	}
	if it.r == nil || it.err != nil {
		return false
	}
	var b [24]byte
	n := 16
	if it.s.Rows {
		n = 24
	}
	if _, err := io.ReadFull(it.r, b[:n]); err != nil {
		if err != io.EOF {
			it.err = fmt.Errorf("read spool: %w", err)
		}
		return false
	}
	it.p.t = int64(binary.LittleEndian.Uint64(b[:]))
	it.p.v = math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
	if it.s.Rows {
		it.p.row = int64(binary.LittleEndian.Uint64(b[16:]))
	}
	return true
}
