package sensorbench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/aerie-db/aerie/bench/harness"
)

// Loads, as UploadResult.Path names them.
const (
	loadUpload   = "POST /upload/{sensor}/csv/0-1-,/float64"
	loadImport   = "aerie import --format=sensor-csv --data.dir"
	loadVMImport = "POST /api/v1/import/csv"
)

// Data directories of the run.
const (
	dirUpload = "aerie-upload"
	dirImport = "aerie-import"
	dirVM     = "vm"
)

// load measures one load of every sensor into srv: a POST to target(s)
// whose body is the sensor's CSV file, its answer checked by check (if
// set).
func (r *runner) load(srv *harness.Peer, path, note string, target func(s *sensorData) string, check func(s *sensorData, answer []byte) error) error {
	res := UploadResult{Peer: srv.Spec.Name, Path: path, Clients: r.cfg.Clients, Requests: len(r.d.Sensors), Note: note, Rates: Rates{Records: r.d.totalPoints(), Bytes: r.d.RawBytes}}
	wall, cpu, err := measure(srv, func() error {
		return forEach(r.ctx, r.cfg.Clients, r.d.Sensors, func(ctx context.Context, s *sensorData) error {
			f, err := os.Open(r.d.path(s))
			if err != nil {
				return err
			}
			defer f.Close()
			b, _, err := do(ctx, srv, http.MethodPost, target(s), "text/csv", f, s.Bytes)
			if err != nil || check == nil {
				return err
			}
			return check(s, b)
		})
	})
	if err != nil {
		return err
	}
	res.set(wall, cpu)
	r.logf("%-5s %s: %d records from %d clients in %.1f s: %.0f records/s, %.0f records per CPU second",
		srv.Spec.Name, path, res.Records, res.Clients, res.Seconds, res.RecordsPerSecond, res.RecordsPerCPUSecond)
	r.rep.Upload = append(r.rep.Upload, res)
	return nil
}

// uploadAerie uploads every sensor's CSV file through /upload into a
// fresh Aerie, checks every answer and /meta, waits for the flush,
// measures the disk and stops the server.
func (r *runner) uploadAerie() error {
	if err := os.RemoveAll(r.dir(dirUpload)); err != nil { // a previous run's, in --dir
		return err
	}
	srv, err := r.start(aerie, r.dir(dirUpload))
	if err != nil {
		return err
	}
	d := r.d
	err = r.load(srv, loadUpload, "", func(s *sensorData) string { return "/upload/" + s.Name + "/csv/0-1-,/float64" }, func(s *sensorData, b []byte) error {
		var ans struct {
			Sensor              string
			Points, First, Last int64
		}
		if err := json.Unmarshal(b, &ans); err != nil {
			return fmt.Errorf("upload %s: answer %q: %w", s.Name, b, err)
		}
		if ans.Sensor != s.Name || ans.Points != d.Points || ans.First != d.Start || ans.Last != d.end() {
			return fmt.Errorf("%w: upload %s answered %s; want %d points from %d to %d", ErrMismatch, s.Name, b, d.Points, d.Start, d.end())
		}
		return nil
	})
	if err != nil {
		return err
	}
	t0 := time.Now()
	if _, err := r.checkMeta(srv, loadUpload); err != nil {
		return err
	}
	note, err := r.awaitAerieFlush(srv, r.sc.FlushWait)
	if err != nil {
		return err
	}
	if err := r.disk(srv.Dir, aerie, loadUpload, t0, note); err != nil {
		return err
	}
	return r.fleet.Stop(srv)
}

// checkMeta checks every sensor's GET /meta/{sensor} against the data and
// sums what it says of the blocks.
func (r *runner) checkMeta(srv *harness.Peer, load string) (IndexResult, error) {
	d := r.d
	ir := IndexResult{Load: load, Sensors: len(d.Sensors)}
	for _, s := range d.Sensors {
		b, err := srv.Get(r.ctx, "/meta/"+s.Name)
		if err != nil {
			return ir, err
		}
		var m struct {
			First, Last, Count, Intervals int64
			IndexBytes                    int64 `json:"index_bytes"`
			DataBytes                     int64 `json:"data_bytes"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return ir, fmt.Errorf("meta %s: %q: %w", s.Name, b, err)
		}
		if m.Count != d.Points || m.First != d.Start || m.Last != d.end() {
			return ir, fmt.Errorf("%w: %s (%s) /meta/%s answered %s; want count %d, first %d, last %d", ErrMismatch, srv.Spec.Name, load, s.Name, strings.TrimSpace(string(b)), d.Points, d.Start, d.end())
		}
		ir.IndexBytes += m.IndexBytes
		ir.DataBytes += m.DataBytes
		ir.Intervals += m.Intervals
	}
	if ir.Intervals > 0 {
		ir.PerSensorYear = float64(ir.IndexBytes) / float64(ir.Intervals) * (yearMs / hourMs)
	}
	return ir, nil
}

// awaitAerieFlush waits until Aerie has flushed what is due and rests: no
// backfill generation and no partition flush left, and the counters of
// flushes, backfill flushes, compactions and blocks moved to the bucket
// unchanged for the scale's Rest, after at least one partition flush, with
// an empty head, or after wait. It returns a note of what stayed in the head.
func (r *runner) awaitAerieFlush(srv *harness.Peer, wait time.Duration) (string, error) {
	start := time.Now()
	var last string
	since := time.Now()
	for {
		m, err := srv.Get(r.ctx, "/metrics")
		if err != nil {
			return "", err
		}
		val := func(name string) float64 { v, _ := harness.MetricValue(m, name); return v }
		busy := val("aerie_backfill_generations") > 0 || val("aerie_flush_groups") > 0
		state := fmt.Sprint(val("aerie_flushes_total"), val("aerie_backfill_flushes_total"), val("aerie_compactions_total"), val("aerie_bucket_moved_blocks_total"), busy)
		if state != last {
			last, since = state, time.Now()
		}
		flushed := val("aerie_flushes_total") > 0
		empty := val("aerie_head_series") == 0 // history runs went straight into blocks
		switch {
		case !busy && time.Since(since) >= r.sc.Rest && (flushed || empty || time.Since(start) >= wait):
			if empty {
				return "every point went straight into blocks (history runs); the head is empty", nil
			}
			if !flushed {
				return fmt.Sprintf("no head partition flush within %v: the head's data are in the WAL", wait), nil
			}
			return "the head's last partitions stay in the WAL until newer data come (Aerie flushes a partition once the head has moved past it)", nil
		case time.Since(start) >= wait+5*time.Minute:
			return fmt.Sprintf("flushes or compactions still running %v after the load", time.Since(start).Round(time.Second)), nil
		}
		if err := r.sleep(250 * time.Millisecond); err != nil {
			return "", err
		}
	}
}

// disk measures dir once its size has not changed for a second.
func (r *runner) disk(dir, peer, load string, since time.Time, note string) error {
	var (
		total int64
		byTop map[string]int64
		last  = int64(-1)
		same  int
	)
	for deadline := time.Now().Add(time.Minute); ; {
		var err error
		if total, byTop, err = harness.DiskUsage(dir); err != nil {
			return err
		}
		if total == last {
			same++
		} else {
			same = 0
		}
		if same >= 4 || time.Now().After(deadline) {
			break
		}
		last = total
		if err := r.sleep(250 * time.Millisecond); err != nil {
			return err
		}
	}
	res := DiskResult{Peer: peer, Load: load, Bytes: total, ByTop: byTop, Seconds: time.Since(since).Seconds(), Note: note,
		StoredOverRaw: float64(total) / float64(r.d.RawBytes), BytesPerRecord: float64(total) / float64(r.d.totalPoints())}
	r.rep.Disk = append(r.rep.Disk, res)
	r.logf("%-5s disk after %s: %d bytes, %.3f of the raw CSV, %.3f B/record %v", peer, load, total, res.StoredOverRaw, res.BytesPerRecord, byTop)
	return nil
}

// uploadVM imports every sensor's CSV file into a fresh VictoriaMetrics
// through /api/v1/import/csv, the same bodies as Aerie's uploads, checks
// the counts, measures the disk once flushed and stops the server.
func (r *runner) uploadVM() error {
	if err := os.RemoveAll(r.dir(dirVM)); err != nil {
		return err
	}
	srv, err := r.start(vm, r.dir(dirVM))
	if err != nil {
		return err
	}
	if err := r.load(srv, loadVMImport, "acknowledged before fsync", func(s *sensorData) string {
		return "/api/v1/import/csv?format=" + url.QueryEscape("1:time:unix_ms,2:metric:"+s.Name)
	}, nil); err != nil {
		return err
	}
	t0 := time.Now()
	if err := harness.AwaitVMFlush(r.ctx, srv); err != nil {
		return err
	}
	if err := r.checkVMCounts(srv); err != nil {
		return err
	}
	if err := r.disk(srv.Dir, vm, loadVMImport, t0, "after /internal/force_flush and the in-memory parts' flush"); err != nil {
		return err
	}
	return r.fleet.Stop(srv)
}

// checkVMCounts counts every sensor's samples in VictoriaMetrics.
func (r *runner) checkVMCounts(srv *harness.Peer) error {
	d := r.d
	window := (d.end()-d.Start)/1000 + 3600
	for _, s := range d.Sensors {
		form := url.Values{"query": {fmt.Sprintf("count_over_time(%s[%ds])", s.Name, window)}, "time": {promTime(d.end())}, "nocache": {"1"}}
		b, _, err := postForm(r.ctx, srv, "/api/v1/query", form)
		if err != nil {
			return err
		}
		res, err := parsePromResult(b)
		if err != nil {
			return fmt.Errorf("vm count of %s: %w", s.Name, err)
		}
		var got int64
		for _, ser := range res {
			for _, p := range ser.points {
				got += int64(p.v)
			}
		}
		if got != d.Points {
			return fmt.Errorf("%w: vm counts %d samples of %s, %d were imported", ErrMismatch, got, s.Name, d.Points)
		}
	}
	return nil
}

// importAerie imports every sensor's CSV file with one `aerie import
// --format=sensor-csv` into a fresh data directory (each file NAME.csv is
// sensor NAME, read as Peregreen's 0-1-, with type float64).
func (r *runner) importAerie() error {
	d := r.d
	dir := r.dir(dirImport)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	res := UploadResult{Peer: aerie, Path: loadImport, Clients: 1, Requests: 1, Rates: Rates{Records: d.totalPoints(), Bytes: d.RawBytes},
		Note: "one process over every file (--sensor.format=0-1-, --sensor.type=float64), each sensor file in time order written straight into blocks as a history run while the next file is parsed (unordered ones sorted in bounded memory), the head flushed into blocks at the end"}
	args := []string{"import", "--data.dir=" + dir, "--format=sensor-csv", "--sensor.format=0-1-,", "--sensor.type=float64", "--progress=none"}
	for _, s := range d.Sensors {
		args = append(args, d.path(s))
	}
	t0 := time.Now()
	cmd := exec.CommandContext(r.ctx, r.cfg.Aerie, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("aerie import: %w\n%s", err, out)
	}
	res.set(time.Since(t0), cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	r.logf("aerie %s: %d records in %.1f s: %.0f records/s, %.0f records per CPU second", loadImport, res.Records, res.Seconds, res.RecordsPerSecond, res.RecordsPerCPUSecond)
	r.rep.Upload = append(r.rep.Upload, res)
	return r.disk(dir, aerie, loadImport, time.Now(), "aerie import writes history runs and flushes the head into blocks at its end")
}

// indexOfImport starts Aerie over the imported directory, checks every
// sensor's /meta and records the index size, then stops it.
func (r *runner) indexOfImport() error {
	srv, err := r.start(aerie, r.dir(dirImport))
	if err != nil {
		return err
	}
	ir, err := r.checkMeta(srv, loadImport)
	if err != nil {
		return err
	}
	r.rep.Index = append(r.rep.Index, ir)
	r.logf("aerie index after %s: %d bytes of block metrics for %d intervals: %.0f B per sensor-year (Peregreen: %d)", loadImport, ir.IndexBytes, ir.Intervals, ir.PerSensorYear, PeregreenIndexBytesPerSensorYear)
	return r.fleet.Stop(srv)
}
