package cachebench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/aerie-db/aerie/bench/harness"
)

// ErrMismatch is wrapped by the error of a run in which an answer
// assembled by a system differs from InfluxDB's own (or InfluxDB's from
// the generated data).
var ErrMismatch = errors.New("answers differ")

// runner carries one run's state.
type runner struct {
	ctx       context.Context
	cfg       Config
	sc        Scale
	fleet     *harness.Fleet
	d         Dataset
	keys      []Key
	db        *influx
	cacheSize int64
	rep       *Report
}

// Run loads the dataset into a fresh InfluxDB and runs every workload
// through each system (doc.go). Every server it starts is stopped before
// it returns.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	sc, workloads, err := cfg.check()
	if err != nil {
		return nil, err
	}
	if err := Available(); err != nil {
		return nil, err
	}
	root := cfg.Dir
	if root == "" {
		if root, err = os.MkdirTemp("", "aerie-bench-cache-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(root)
	} else if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	r := &runner{ctx: ctx, cfg: cfg, sc: sc, fleet: harness.NewFleet(root, cfg.Log), d: newDataset(sc)}
	defer r.fleet.StopAll()
	r.keys = r.d.Keys()
	r.rep = r.newReport()
	r.rep.Config["loadavg_start"] = harness.LoadAvg()

	r.logf("starting influxd")
	if r.db, err = startInflux(ctx, r.fleet, cfg.Clients); err != nil {
		return nil, err
	}
	defer r.db.client.CloseIdleConnections()
	if err := r.load(); err != nil {
		return nil, err
	}
	for _, w := range workloads {
		if err := r.workload(w); err != nil {
			return nil, fmt.Errorf("workload %s: %w", w.Name, err)
		}
	}
	r.rep.Config["loadavg_end"] = harness.LoadAvg()
	r.rep.Ratios = r.rep.ratios()
	r.rep.Done()
	return r.rep, nil
}

func (r *runner) newReport() *Report {
	return &Report{
		Header: harness.NewHeader(Kind, r.sc.Name),
		Config: map[string]string{
			"clients":         strconv.Itoa(r.cfg.Clients),
			"seed":            strconv.FormatUint(r.cfg.Seed, 10),
			"check_every":     strconv.Itoa(r.cfg.CheckEvery),
			"cache_share":     strconv.FormatFloat(r.cfg.CacheShare, 'f', -1, 64),
			"chunk_unit":      ChunkUnit.String(),
			"zipfian":         strconv.FormatFloat(ZipfianConstant, 'f', -1, 64),
			"influxdb":        harness.Version("influxd", "version"),
			"memcached":       harness.Version("memcached", "-V"),
			"aerie_front_end": "in process: internal/cache.Open, Get and Set called by the client goroutines",
			"aerie_partial":   "every partial hit used (PartialMinBytes -1)",
		},
	}
}

// load writes the dataset into InfluxDB and sizes the caches.
func (r *runner) load() error {
	d := r.d
	r.logf("loading %d sensors × %d points × %d fields into InfluxDB", d.Sensors, d.Steps(), len(Fields))
	t := time.Now()
	sent, err := r.db.load(r.ctx, d)
	if err != nil {
		return err
	}
	secs := time.Since(t).Seconds()
	size := d.Bytes()
	// Both caches get the same bytes: the share of the dataset rounded
	// to whole MiB, memcached's -m unit.
	r.cacheSize = memcachedMB(int64(float64(size)*r.cfg.CacheShare)) << 20
	points := int64(d.Sensors) * int64(d.Steps())
	r.rep.Dataset = DatasetInfo{
		Sensors: d.Sensors, Fields: len(Fields), Keys: len(r.keys),
		IntervalSeconds: d.step(), Days: d.Span.Hours() / 24,
		Points: points, Values: points * int64(len(Fields)), Bytes: size, LineBytes: sent, LoadSeconds: secs,
		CacheBytes: r.cacheSize, MemcachedMB: r.cacheSize >> 20, AerieSlabBytes: aerieSlabSize(r.cacheSize),
	}
	r.logf("loaded %.0f MB of line protocol in %.1f s; dataset %.1f MB, caches %.2f MB", float64(sent)/1e6, secs, float64(size)/1e6, float64(r.cacheSize)/1e6)
	return nil
}

// memcachedMB is memcached's -m for a cache of size bytes: whole MiB,
// rounded to the nearest, at least 1.
func memcachedMB(size int64) int64 { return max(1, (size+1<<19)>>20) }

// workload runs w's queries through each system, fresh, and checks the
// sampled answers.
func (r *runner) workload(w Workload) error {
	qs := Generate(r.d, w, r.sc.Queries, r.cfg.Seed)
	info := WorkloadInfo{Name: w.Name, Queries: len(qs)}
	for _, lr := range w.Ranges {
		info.Ranges = append(info.Ranges, fmt.Sprintf("%v–%v", shortDur(lr.Min), shortDur(lr.Max)))
	}
	var span float64
	for _, q := range qs {
		span += float64(q.End-q.Start)/60 + 1
	}
	info.MeanSpan = span / float64(len(qs))
	// InfluxDB's answers to the sampled queries, fetched before the
	// timed runs; every system's answer to them must equal these.
	want := make([]Answer, len(qs))
	for i := 0; i < len(qs); i += r.cfg.CheckEvery {
		q := qs[i]
		a, err := r.db.query(r.keys[q.Key], q.Start, q.End)
		if err != nil {
			return err
		}
		if diff := a.Diff(r.d.Expected(r.keys[q.Key], q.Start, q.End)); diff != "" {
			return fmt.Errorf("%w: InfluxDB's answer to %s: %s (the data loaded are not the data generated)", ErrMismatch, r.keys[q.Key].Range(q.Start, q.End), diff)
		}
		want[i] = a
	}
	for _, name := range []string{NoCache, Memcached, Aerie} {
		sys, err := r.open(name, w.Name)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		res, err := r.measure(sys, qs, want)
		st := sys.stats()
		if cerr := sys.close(); err == nil && cerr != nil {
			err = fmt.Errorf("close: %w", cerr)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		res.Workload, res.System, res.Stats = w.Name, name, st
		if name == NoCache {
			info.MeanBytes = float64(res.Bytes) / float64(res.Queries)
		}
		r.logf("%-6s %-13s %5d queries in %5.1f s: %6.2f MB/s, mean %6.1f ms, p99 %6.1f ms, hits %d/%d/%d (byte hit ratio %.3f), %d InfluxDB queries",
			w.Name, name, res.Queries, res.Seconds, res.BandwidthMBps, res.MeanMs, res.P99Ms, res.Hits, res.Partials, res.Misses, res.HitRatio, res.DBQueries)
		if len(st) > 0 {
			r.logf("%-6s %-13s %v", w.Name, name, st)
		}
		r.rep.Results = append(r.rep.Results, res)
	}
	r.rep.Workloads = append(r.rep.Workloads, info)
	return nil
}

// open starts a fresh system.
func (r *runner) open(name, workload string) (system, error) {
	dir := filepath.Join(r.fleet.Root, workload+"-"+name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	switch name {
	case NoCache:
		return &noCache{db: r.db, keys: r.keys}, nil
	case Memcached:
		return startMemcached(r.ctx, r.fleet, dir, r.cacheSize>>20, r.db, r.keys, r.cfg.Clients)
	case Aerie:
		return openAerie(dir, r.cacheSize, r.db, r.keys)
	}
	return nil, fmt.Errorf("unknown system %q", name)
}

// measure runs qs through sys from Clients goroutines (each takes the
// next query in order) and compares the answers of the checked queries
// (every CheckEvery-th) with want's.
func (r *runner) measure(sys system, qs []Query, want []Answer) (Result, error) {
	lat := make([]time.Duration, len(qs))
	outs := make([]outcome, len(qs))
	bytes := make([]int64, len(qs))
	got := make([]Answer, len(qs)) // of the checked queries
	var next atomic.Int64
	g, ctx := errgroup.WithContext(r.ctx)
	db0 := r.db.queries.Load()
	start := time.Now()
	for range r.cfg.Clients {
		g.Go(func() error {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(qs) {
					return nil
				}
				t := time.Now()
				a, out, err := sys.answer(qs[i])
				lat[i] = time.Since(t)
				if err != nil {
					return fmt.Errorf("query %d (%s): %w", i, r.keys[qs[i].Key].Range(qs[i].Start, qs[i].End), err)
				}
				outs[i], bytes[i] = out, a.Bytes()
				if i%r.cfg.CheckEvery == 0 {
					got[i] = a
				}
			}
			return nil
		})
	}
	err := g.Wait()
	secs := time.Since(start).Seconds()
	if err != nil {
		return Result{}, err
	}
	if err := r.ctx.Err(); err != nil {
		return Result{}, err
	}
	res := Result{Queries: len(qs), Seconds: secs, DBQueries: r.db.queries.Load() - db0}
	for i := range qs {
		switch outs[i].status {
		case hit:
			res.Hits++
		case partial:
			res.Partials++
		default:
			res.Misses++
		}
		res.Bytes += bytes[i]
		res.CacheBytes += outs[i].cacheBytes
	}
	res.HitRatio = div(float64(res.CacheBytes), float64(res.Bytes))
	res.BandwidthMBps = float64(res.Bytes) / 1e6 / secs
	res.QPS = float64(len(qs)) / secs
	var sum time.Duration
	for _, l := range lat {
		sum += l
	}
	res.MeanMs = harness.Ms(sum / time.Duration(len(lat)))
	res.P50Ms, res.P99Ms = harness.Ms(harness.Percentile(lat, 0.5)), harness.Ms(harness.Percentile(lat, 0.99))
	for i := 0; i < len(qs); i += r.cfg.CheckEvery {
		if diff := got[i].Diff(want[i]); diff != "" {
			q := qs[i]
			return Result{}, fmt.Errorf("%w: query %d (%s), answered as a %s: %s", ErrMismatch, i, r.keys[q.Key].Range(q.Start, q.End), outs[i].status, diff)
		}
		res.Checked++
	}
	if err := r.db.Alive(); err != nil {
		return Result{}, err
	}
	return res, nil
}

func (s status) String() string {
	switch s {
	case hit:
		return "hit"
	case partial:
		return "partial hit"
	}
	return "miss"
}

func shortDur(d time.Duration) string {
	switch {
	case d%week == 0:
		return fmt.Sprintf("%dw", d/week)
	case d%day == 0:
		return fmt.Sprintf("%dd", d/day)
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return fmt.Sprintf("%dm", d/time.Minute)
}

func (r *runner) logf(format string, args ...any) { harness.Logf(r.cfg.Log, format, args...) }
