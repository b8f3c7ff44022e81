package sensor

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/aerie-db/aerie/internal/sensor/pointio"
	"github.com/aerie-db/aerie/internal/sensor/spool"
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
	sp := &spool.Spool{Dir: s.opts.TmpDir, MemMax: s.opts.SpoolPoints}
	defer sp.Close()
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
		if err := sp.Add(t, v, 0); err != nil {
			return res, &UploadError{Err: err}
		}
		res.MinT, res.MaxT = min(res.MinT, t), max(res.MaxT, t)
		if sp.Len()%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return res, &UploadError{Err: err}
			}
		}
	}
	if err := rd.Err(); err != nil {
		var ie *pointio.InputError
		return res, &UploadError{Input: errors.As(err, &ie), Err: err}
	}
	if sp.Len() == 0 {
		res.MinT, res.MaxT = 0, 0
		return res, nil
	}
	if err := sp.SortMem(); err != nil {
		return res, &UploadError{Input: true, Err: err}
	}
	if _, err := s.reg.Set(sensor, typ); err != nil {
		return res, &UploadError{Err: fmt.Errorf("register sensor type: %w", err)}
	}

	lset := labels.FromStrings(labels.MetricName, sensor)
	it, err := sp.Iter()
	if err != nil {
		return res, &UploadError{Err: err}
	}
	if sp.Sorted() {
		bound := s.db.RunBound()
		n, err := s.db.WriteRun(ctx, lset, func() (int64, float64, bool) {
			if !it.Next() {
				return 0, 0, false
			}
			if t, v := it.At(); t < bound {
				return t, v, true
			}
			it.Unread() // for the appender
			return 0, 0, false
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
	for it.Next() {
		t, v := it.At()
		r, err := app.Append(ref, lset, t, v)
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
	if err := it.Err(); err != nil {
		_ = app.Rollback()
		return res, &UploadError{Stored: res.Points, Err: err}
	}
	if err := app.Commit(); err != nil {
		return res, &UploadError{Stored: res.Points, Err: err}
	}
	res.Points += int64(inBatch)
	res.Points += sp.Dups() // counted once stored, as the engine counts a repeated sample
	s.m.uploaded.Add(float64(res.Points))
	return res, nil
}
