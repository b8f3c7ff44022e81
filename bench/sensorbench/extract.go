package sensorbench

import (
	"bufio"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// mode is one of Peregreen's kinds of extraction.
type mode struct {
	name     string
	interval int64 // ms; 0: none
	fn       string
	// perHour is the records an aligned hour answers.
	perHour int64
}

// modes are Peregreen's four kinds of extraction (seed 004 §3.3).
var modes = []mode{
	{name: "full", fn: "none", perHour: 3600},
	{name: "sampling", interval: 60_000, fn: "none", perHour: 60},
	{name: "aggregation", interval: hourMs, fn: "min,max,avg", perHour: 1},
	{name: "transformation", fn: "movavg:10", perHour: 3600},
}

// ranges are the extracted spans, in hours, as in Peregreen's §4.1.
var ranges = []int64{1, 24, 240}

// extraction is one request: a sensor and an aligned range.
type extraction struct {
	sensor   string
	from, to int64 // ms, inclusive
}

// instances returns n requests of hours each over the data, drawn by seed
// and name: sensors in turn from a random one, start hours at random.
func (r *runner) instances(name string, hours int64, n int) []extraction {
	h := fnv.New64a()
	h.Write([]byte(name))
	rnd := rand.New(rand.NewPCG(uint64(r.cfg.Seed), h.Sum64()))
	d := r.d
	first := rnd.IntN(len(d.Sensors))
	out := make([]extraction, n)
	for i := range out {
		start := d.Start + rnd.Int64N(int64(d.hours())-hours+1)*hourMs
		out[i] = extraction{sensor: d.Sensors[(first+i)%len(d.Sensors)].Name, from: start, to: start + hours*hourMs - 1}
	}
	return out
}

// extract runs every extraction case on Aerie and, for the full mode,
// VictoriaMetrics' export of the same ranges.
func (r *runner) extract(a, v *server) error {
	d := r.d
	for _, hours := range ranges {
		if hours > int64(d.hours()) {
			r.note("no %d h extraction: the data cover %d h", hours, d.hours())
			continue
		}
		for _, m := range modes {
			want := m.perHour * hours
			n := int(min(max((r.sc.ExtractRecords+want-1)/want, int64(r.sc.MinRequests)), int64(r.sc.MaxRequests)))
			inst := r.instances(fmt.Sprintf("%dh", hours), hours, n)
			for _, w := range writers {
				path := func(e extraction) string {
					return fmt.Sprintf("/extract/%s/%d-%d/%d/%s/%s", e.sensor, e.from, e.to, m.interval, url.PathEscape(m.fn), w)
				}
				res, err := r.extractCase(a, inst, want, path, func(rd io.Reader) (records, error) { return decodeRecords(w, rd) })
				if err != nil {
					return fmt.Errorf("%s %dh %s: %w", m.name, hours, w, err)
				}
				res.Mode, res.Range, res.Writer, res.Func, res.Interval = m.name, fmt.Sprintf("%dh", hours), w, m.fn, m.interval
				r.rep.Extract = append(r.rep.Extract, res)
				r.logf("extract %-5s %-14s %4dh %-4s: %d requests, %d records, %.0f records/s, %.0f records per CPU second",
					aerie, m.name, hours, w, res.Requests, res.Records, res.RecordsPerSecond, res.RecordsPerCPUSecond)
			}
			if m.name != "full" {
				continue
			}
			path := func(e extraction) string {
				return "/api/v1/export?" + url.Values{"match[]": {e.sensor}, "start": {promTime(e.from)}, "end": {promTime(e.to)}}.Encode()
			}
			res, err := r.extractCase(v, inst, want, path, func(rd io.Reader) (records, error) {
				return decodeVMExport(bufio.NewReaderSize(rd, 64<<10))
			})
			if err != nil {
				return fmt.Errorf("vm export %dh: %w", hours, err)
			}
			res.Mode, res.Range, res.Writer, res.Func = m.name, fmt.Sprintf("%dh", hours), "export (JSON lines)", "none"
			r.rep.Extract = append(r.rep.Extract, res)
			r.logf("extract %-5s %-14s %4dh %-4s: %d requests, %d records, %.0f records/s, %.0f records per CPU second",
				vm, m.name, hours, "export", res.Requests, res.Records, res.RecordsPerSecond, res.RecordsPerCPUSecond)
		}
	}
	return nil
}

// extractCase sends every request of inst to s from extractClients
// clients (after one unrecorded request), reads and decodes every answer
// as it arrives, and checks that each holds want records, the first at or
// after the range's start and the last before its end.
func (r *runner) extractCase(s *server, inst []extraction, want int64, path func(extraction) string, decode func(io.Reader) (records, error)) (ExtractResult, error) {
	res := ExtractResult{Peer: s.name, Requests: len(inst)}
	var bytes atomic.Int64
	one := func(ctx context.Context, e extraction) (int64, error) {
		var rs records
		_, err := stream(ctx, s, path(e), func(body io.Reader) error {
			var err error
			rs, err = decode(countingReader{body, &bytes})
			return err
		})
		if err != nil {
			return 0, err
		}
		if rs.n != want || rs.first < e.from || rs.last > e.to {
			return 0, fmt.Errorf("%w: %s %s answered %d records from %d to %d; want %d in [%d, %d]", ErrMismatch, s.name, short(path(e)), rs.n, rs.first, rs.last, want, e.from, e.to)
		}
		return rs.n, nil
	}
	if _, err := one(r.ctx, inst[0]); err != nil { // warm-up, unrecorded
		return res, err
	}
	bytes.Store(0)
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		first   error
		total   atomic.Int64
		nextReq atomic.Int64
	)
	before, err := s.cpu()
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	for range extractClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(nextReq.Add(1)) - 1
				if i >= len(inst) || ctx.Err() != nil {
					return
				}
				n, err := one(ctx, inst[i])
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
						cancel()
					}
					mu.Unlock()
					return
				}
				total.Add(n)
			}
		}()
	}
	wg.Wait()
	wall := time.Since(t0)
	after, err := s.cpu()
	if first != nil {
		if aerr := s.alive(); aerr != nil {
			return res, aerr
		}
		return res, first
	}
	if err != nil {
		return res, err
	}
	res.Records = total.Load()
	res.Bytes = bytes.Load()
	res.Seconds = wall.Seconds()
	res.RecordsPerSecond = float64(res.Records) / res.Seconds
	res.CPUSeconds = (after - before).Seconds()
	if res.CPUSeconds > 0 {
		res.RecordsPerCPUSecond = float64(res.Records) / res.CPUSeconds
	}
	return res, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}
