package sensorbench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"

	"github.com/aerie-db/aerie/bench/harness"
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
	rnd := newRand(r.cfg.Seed, name)
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
func (r *runner) extract(a, v *harness.Peer) error {
	d := r.d
	for _, hours := range ranges {
		if hours > int64(d.hours()) {
			r.note("no %d h extraction: the data cover %d h", hours, d.hours())
			continue
		}
		rng := fmt.Sprintf("%dh", hours)
		for _, m := range modes {
			want := m.perHour * hours
			n := int(min(max((r.sc.ExtractRecords+want-1)/want, int64(r.sc.MinRequests)), int64(r.sc.MaxRequests)))
			inst := r.instances(rng, hours, n)
			for _, w := range writers {
				path := func(e extraction) string {
					return fmt.Sprintf("/extract/%s/%d-%d/%d/%s/%s", e.sensor, e.from, e.to, m.interval, url.PathEscape(m.fn), w)
				}
				err := r.extractCase(a, ExtractResult{Mode: m.name, Range: rng, Writer: w, Func: m.fn, Interval: m.interval}, inst, want, path,
					func(rd io.Reader) (records, error) { return decodeRecords(w, rd) })
				if err != nil {
					return err
				}
			}
			if m.name != "full" {
				continue
			}
			path := func(e extraction) string {
				return "/api/v1/export?" + url.Values{"match[]": {e.sensor}, "start": {promTime(e.from)}, "end": {promTime(e.to)}}.Encode()
			}
			err := r.extractCase(v, ExtractResult{Mode: m.name, Range: rng, Writer: "export (JSON lines)", Func: "none"}, inst, want, path,
				func(rd io.Reader) (records, error) { return decodeVMExport(bufio.NewReaderSize(rd, 64<<10)) })
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// extractCase measures the case res on s: every request of inst from
// extractClients clients (after one unrecorded request), every answer
// read and decoded as it arrives and checked to hold want records, the
// first at or after the range's start and the last before its end.
func (r *runner) extractCase(s *harness.Peer, res ExtractResult, inst []extraction, want int64, path func(extraction) string, decode func(io.Reader) (records, error)) error {
	res.Peer, res.Requests = s.Spec.Name, len(inst)
	var bytes, total atomic.Int64
	one := func(ctx context.Context, e extraction) error {
		var rs records
		_, err := send(ctx, s, http.MethodGet, path(e), "", nil, 0, func(body io.Reader) error {
			var err error
			rs, err = decode(countingReader{body, &bytes})
			return err
		})
		if err != nil {
			return err
		}
		if rs.n != want || rs.first < e.from || rs.last > e.to {
			return fmt.Errorf("%w: %s %s answered %d records from %d to %d; want %d in [%d, %d]", ErrMismatch, s.Spec.Name, short(path(e)), rs.n, rs.first, rs.last, want, e.from, e.to)
		}
		total.Add(rs.n)
		return nil
	}
	if err := one(r.ctx, inst[0]); err != nil { // warm-up, unrecorded
		return fmt.Errorf("%s %s %s %s: %w", res.Peer, res.Mode, res.Range, res.Writer, err)
	}
	bytes.Store(0)
	total.Store(0)
	wall, cpu, err := measure(s, func() error { return forEach(r.ctx, extractClients, inst, one) })
	if err != nil {
		return fmt.Errorf("%s %s %s %s: %w", res.Peer, res.Mode, res.Range, res.Writer, err)
	}
	res.Records, res.Bytes = total.Load(), bytes.Load()
	res.set(wall, cpu)
	r.rep.Extract = append(r.rep.Extract, res)
	r.logf("extract %-5s %-14s %4s %-4s: %d requests, %d records, %.0f records/s, %.0f records per CPU second",
		res.Peer, res.Mode, res.Range, res.Writer, res.Requests, res.Records, res.RecordsPerSecond, res.RecordsPerCPUSecond)
	return nil
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
