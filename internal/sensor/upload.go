package sensor

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/aerie-db/aerie/internal/sensor/pointio"
)

// UploadResult reports a finished upload.
type UploadResult struct {
	Sensor string `json:"sensor"`
	Type   string `json:"type"`
	Points int64  `json:"points"`
	MinT   int64  `json:"first"`
	MaxT   int64  `json:"last"`
}

// UploadError is a failed upload: Stored says how many points, the first
// Stored rows of the body in order, were stored before Err.
type UploadError struct {
	Stored int64
	Input  bool // Err is the input's fault (400), not the server's
	Err    error
}

func (e *UploadError) Error() string {
	if e.Stored == 0 {
		return fmt.Sprintf("nothing stored: %v", e.Err)
	}
	return fmt.Sprintf("stored the first %d points (rows 1 to %d), then: %v", e.Stored, e.Stored, e.Err)
}

func (e *UploadError) Unwrap() error { return e.Err }

// ErrTypeConflict is wrapped by uploads whose type differs from the one
// the sensor was first uploaded with.
var ErrTypeConflict = errors.New("sensor type conflict")

// Upload stores a sensor's points read from rd, of type typ, in two
// passes so that a bad row stores nothing: the first reads, checks and
// spools every point (in memory up to Options.SpoolPoints, then to a
// temporary file), the second stores them. Points may be of any age and
// order; where the sensor holds data at a timestamp already, the engine's
// rule decides (a duplicate keeps the first write).
//
// Points in time order (as read, or sorted in memory; a body given twice
// at one timestamp with one value counts it once, with two values is
// refused) that are older than the head's partitions (tsdb.DB.RunBound)
// go straight into blocks as one history run (tsdb.DB.WriteRun): no WAL,
// no head. The rest, and every point of a body too large to sort in
// memory that is out of order, are appended in batches of
// Options.BatchPoints through the engine's HistoryAppender (a partition
// reaching below the head's in-order bound goes to the backfill whole, so
// no metric interval gets two sources). An error of the second pass (the
// engine failing) says how many points were stored.
func (s *Service) Upload(ctx context.Context, sensor string, typ pointio.Type, rd pointio.Reader) (UploadResult, error) {
	res := UploadResult{Sensor: sensor, Type: typ.String(), MinT: math.MaxInt64, MaxT: math.MinInt64}
	if err := checkName(sensor); err != nil {
		return res, &UploadError{Input: true, Err: err}
	}
	if have, ok := s.reg.Type(sensor); ok && have != typ {
		return res, &UploadError{Input: true, Err: fmt.Errorf("%w: sensor %q holds %s values, the upload says %s", ErrTypeConflict, sensor, have, typ)}
	}
	sp := &spool{dir: s.opts.TmpDir, memMax: s.opts.SpoolPoints, sorted: true}
	defer sp.close()
	lo, hi := s.db.TimeBounds()
	for rd.Next() {
		t, v := rd.At()
		// The engine's time limits, checked again only for a point outside
		// them as they were (WriteRun and the appender check again).
		if t < lo || t > hi {
			if err := s.db.CheckTime(t); err != nil {
				return res, &UploadError{Input: true, Err: &pointio.InputError{Row: rd.Row(), Field: "t", Offset: rd.Offset(), Err: fmt.Errorf("timestamp %d: %w", t, err)}}
			}
			lo, hi = s.db.TimeBounds()
		}
		if err := sp.add(t, v); err != nil {
			return res, &UploadError{Err: err}
		}
		res.MinT, res.MaxT = min(res.MinT, t), max(res.MaxT, t)
		if sp.n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return res, &UploadError{Err: err}
			}
		}
	}
	if err := rd.Err(); err != nil {
		var ie *pointio.InputError
		return res, &UploadError{Input: errors.As(err, &ie), Err: err}
	}
	if sp.n == 0 {
		res.MinT, res.MaxT = 0, 0
		return res, nil
	}
	if err := sp.sortMem(); err != nil {
		return res, &UploadError{Input: true, Err: err}
	}
	if _, err := s.reg.Set(sensor, typ); err != nil {
		return res, &UploadError{Err: fmt.Errorf("register sensor type: %w", err)}
	}

	lset := labels.FromStrings(labels.MetricName, sensor)
	it, err := sp.iterate()
	if err != nil {
		return res, &UploadError{Err: err}
	}
	if sp.sorted {
		bound := s.db.RunBound()
		n, err := s.db.WriteRun(ctx, lset, func() (int64, float64, bool) {
			if !it.next() {
				return 0, 0, false
			}
			if it.t >= bound {
				it.unread() // for the appender
				return 0, 0, false
			}
			return it.t, it.v, true
		})
		if err != nil {
			return res, &UploadError{Err: err}
		}
		res.Points += n
		s.m.runPoints.Add(float64(n))
	}
	var ref storage.SeriesRef
	app := s.db.HistoryAppender(ctx)
	var inBatch int
	for it.next() {
		r, err := app.Append(ref, lset, it.t, it.v)
		if err != nil {
			_ = app.Rollback()
			return res, &UploadError{Stored: res.Points, Err: fmt.Errorf("row %d: %w", res.Points+int64(inBatch)+1, err)}
		}
		if r != 0 {
			ref = r
		}
		inBatch++
		if inBatch == s.opts.BatchPoints {
			if err := app.Commit(); err != nil {
				return res, &UploadError{Stored: res.Points, Err: err}
			}
			res.Points += int64(inBatch)
			inBatch = 0
			app = s.db.HistoryAppender(ctx)
		}
	}
	if err := it.err; err != nil {
		_ = app.Rollback()
		return res, &UploadError{Stored: res.Points, Err: err}
	}
	if err := app.Commit(); err != nil {
		return res, &UploadError{Stored: res.Points, Err: err}
	}
	res.Points += int64(inBatch)
	res.Points += sp.dups // counted once stored, as the engine counts a repeated sample
	s.m.uploaded.Add(float64(res.Points))
	return res, nil
}

// spool holds an upload's points between its two passes: in memory up to
// memMax points, then appended to an unlinked temporary file (16 bytes a
// point), so memory stays bounded whatever the body's size.
type spool struct {
	dir    string
	memMax int
	mem    []point
	f      *os.File
	w      *bufio.Writer
	n      int64
	// sorted: the points are strictly increasing in time (as added, or
	// after sortMem); last is the time of the last one added.
	sorted bool
	last   int64
	dups   int64 // points sortMem dropped as repeats of one before
}

type point struct {
	t int64
	v float64
}

func (s *spool) add(t int64, v float64) error {
	if s.n > 0 && t <= s.last {
		s.sorted = false
	}
	s.last = t
	s.n++
	if len(s.mem) < s.memMax {
		s.mem = append(s.mem, point{t, v})
		return nil
	}
	if s.f == nil {
		f, err := os.CreateTemp(s.dir, "upload-*.spool")
		if err != nil {
			return fmt.Errorf("spool upload: %w", err)
		}
		_ = os.Remove(f.Name()) // the open file outlives its name
		s.f, s.w = f, bufio.NewWriterSize(f, 1<<20)
	}
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:], uint64(t))
	binary.LittleEndian.PutUint64(b[8:], math.Float64bits(v))
	if _, err := s.w.Write(b[:]); err != nil {
		return fmt.Errorf("spool upload: %w", err)
	}
	return nil
}

// sortMem sorts points held in memory alone by time, keeping the order of
// points at one time, and drops a point repeating the time and value of
// the one before; two values at one time are an error. Points spooled to
// the file are left as they are (and sorted stays false if they are out
// of order).
func (s *spool) sortMem() error {
	if s.sorted || s.f != nil {
		return nil
	}
	slices.SortStableFunc(s.mem, func(a, b point) int { return cmp.Compare(a.t, b.t) })
	out := s.mem[:1]
	for _, p := range s.mem[1:] {
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
	s.mem = out
	s.n = int64(len(out))
	s.sorted = true
	return nil
}

func (s *spool) iterate() (*spoolIter, error) {
	it := &spoolIter{s: s}
	if s.f != nil {
		if err := s.w.Flush(); err != nil {
			return nil, fmt.Errorf("spool upload: %w", err)
		}
		if _, err := s.f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("spool upload: %w", err)
		}
		it.r = bufio.NewReaderSize(s.f, 1<<20)
	}
	return it, nil
}

func (s *spool) close() {
	if s.f != nil {
		s.f.Close()
	}
}

type spoolIter struct {
	s    *spool
	i    int
	r    *bufio.Reader
	t    int64
	v    float64
	err  error
	back bool // next gives t, v again (unread)
}

// unread makes next give the current point again.
func (it *spoolIter) unread() { it.back = true }

func (it *spoolIter) next() bool {
	if it.back {
		it.back = false
		return true
	}
	if it.i < len(it.s.mem) {
		p := it.s.mem[it.i]
		it.i++
		it.t, it.v = p.t, p.v
		return true
	}
	if it.r == nil || it.err != nil {
		return false
	}
	var b [16]byte
	if _, err := io.ReadFull(it.r, b[:]); err != nil {
		if err != io.EOF {
			it.err = fmt.Errorf("read upload spool: %w", err)
		}
		return false
	}
	it.t = int64(binary.LittleEndian.Uint64(b[:]))
	it.v = math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
	return true
}
