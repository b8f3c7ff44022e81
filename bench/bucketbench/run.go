package bucketbench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	promtsdb "github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/thanos-io/objstore"
	"github.com/thanos-io/objstore/providers/filesystem"
	"golang.org/x/sync/errgroup"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/bench/thanosstore"
	"github.com/aerie-db/aerie/bench/workload"
	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/bucket"
	"github.com/aerie-db/aerie/internal/index"
	"github.com/aerie-db/aerie/internal/tsdb"
	"github.com/aerie-db/aerie/internal/wal"
)

// Config is one run.
type Config struct {
	Scale     string        // small (CI) or medium (make benchmarks)
	Workloads []string      // node, tsbs (default both)
	Latency   time.Duration // added to every bucket request (default 30 ms)
	Dir       string        // scratch directory (default: a temporary one, removed after)
	Log       io.Writer     // progress, or nil
}

// scale sizes the data of one workload.
type scale struct {
	Targets  int
	Interval time.Duration
}

const span = 8 * 24 * time.Hour

var scales = map[string]map[string]scale{
	"small":  {"node": {Targets: 2, Interval: 5 * time.Minute}, "tsbs": {Targets: 100, Interval: 5 * time.Minute}},
	"medium": {"node": {Targets: 10, Interval: time.Minute}, "tsbs": {Targets: 100, Interval: 30 * time.Second}},
}

// ErrMismatch: the two readers answered a query differently.
var ErrMismatch = errors.New("the readers' answers differ")

// Run generates, stores, uploads and queries each workload.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	sc, ok := scales[cfg.Scale]
	if !ok {
		return nil, fmt.Errorf("--scale=%q: want small or medium", cfg.Scale)
	}
	if len(cfg.Workloads) == 0 {
		cfg.Workloads = []string{"node", "tsbs"}
	}
	cfg.Latency = cmp.Or(cfg.Latency, 30*time.Millisecond)
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "aerie-bucketbench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	rep := &Report{Header: harness.NewHeader(Kind, cfg.Scale), LatencyMs: float64(cfg.Latency) / 1e6}
	for _, name := range cfg.Workloads {
		s, ok := sc[name]
		if !ok {
			return nil, fmt.Errorf("--workload=%q: want node or tsbs", name)
		}
		wd := filepath.Join(dir, name)
		if err := os.RemoveAll(wd); err != nil {
			return nil, err
		}
		res, err := runWorkload(ctx, cfg, name, s, wd)
		if res != nil {
			rep.Workloads = append(rep.Workloads, *res)
		}
		if err != nil {
			return rep, fmt.Errorf("workload %s: %w", name, err)
		}
	}
	rep.Done()
	return rep, nil
}

func runWorkload(ctx context.Context, cfg Config, name string, s scale, dir string) (*WorkloadResult, error) {
	w, err := workload.New(name, workload.Spec{Targets: s.Targets, Interval: s.Interval, Duration: span, Seed: 1})
	if err != nil {
		return nil, err
	}
	res := &WorkloadResult{Workload: name, Targets: s.Targets, Interval: s.Interval.String(), Days: int(span / (24 * time.Hour)), Samples: w.Samples()}
	for t := range w.NumTargets() {
		res.Series += len(w.Series(t))
	}
	harness.Logf(cfg.Log, "%s: %d series, %d samples over %d days", name, res.Series, res.Samples, res.Days)

	aerieDir, promDir, bktDir := filepath.Join(dir, "aerie"), filepath.Join(dir, "prometheus"), filepath.Join(dir, "bucket")
	adb, err := tsdb.Open(aerieDir, &tsdb.Options{FlushCheckInterval: -1, WALSync: wal.SyncInterval, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	popts := promtsdb.DefaultOptions()
	popts.RetentionDuration = (365 * 24 * time.Hour).Milliseconds()
	popts.MaxBlockDuration = (31 * 24 * time.Hour).Milliseconds()
	pdb, err := promtsdb.Open(promDir, nil, nil, popts, nil)
	if err != nil {
		adb.Close()
		return nil, err
	}
	pdb.DisableCompactions()
	err = load(w, adb, pdb)
	if err == nil {
		err = adb.FlushHead()
	}
	if err == nil {
		err = adb.FlushBackfill()
	}
	for err == nil {
		n := len(adb.Blocks())
		if err = adb.CompactBlocks(); err != nil || len(adb.Blocks()) == n {
			break
		}
	}
	if err == nil {
		err = promFlush(pdb, math.MaxInt64)
	}
	if err == nil {
		err = pdb.Compact(ctx)
	}
	aerieBlocks := adb.Blocks()
	var promBlocks []string
	for _, b := range pdb.Blocks() {
		promBlocks = append(promBlocks, b.Dir())
		res.PromBlocks = append(res.PromBlocks, blockSpan(b.MinTime(), b.MaxTime()))
	}
	for _, b := range aerieBlocks {
		res.AerieBlocks = append(res.AerieBlocks, blockSpan(b.MinTime, b.MaxTime))
	}
	if cerr := adb.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		pdb.Close()
		return nil, err
	}
	// Prometheus' blocks stay open in pdb until the upload is done.
	defer pdb.Close()
	harness.Logf(cfg.Log, "%s: aerie blocks %v, prometheus blocks %v", name, res.AerieBlocks, res.PromBlocks)

	// Upload both into one filesystem bucket.
	fsb, err := filesystem.NewBucket(bktDir)
	if err != nil {
		return nil, err
	}
	ast, err := bucket.Wrap(fsb, bucket.Config{}, nil, nil)
	if err != nil {
		return nil, err
	}
	dict, err := index.OpenTagDict(filepath.Join(aerieDir, "tagdict"))
	if err != nil {
		return nil, err
	}
	up := bucket.NewUploader(ast, dict, 0)
	for _, b := range aerieBlocks {
		u, err := up.UploadBlock(ctx, filepath.Join(aerieDir, "blocks", b.ULID))
		if err != nil {
			dict.Close()
			return nil, err
		}
		res.AerieBytes += u.Bytes
	}
	dict.Close()
	for _, d := range promBlocks {
		if err := thanosstore.Upload(ctx, fsb, thanosPrefix, d); err != nil {
			return nil, err
		}
		res.PromBytes += harness.DirSize(d)
	}

	// Open both from the bucket, every request delayed.
	slow := &slowBucket{Bucket: fsb, delay: cfg.Latency}
	aslow, err := bucket.Wrap(slow, bucket.Config{}, nil, nil)
	if err != nil {
		return nil, err
	}
	var astats bucket.ReadStats
	var tstats thanosstore.Stats
	fresh, err := bucket.LoadTagDict(ctx, aslow)
	if err != nil {
		return nil, err
	}
	ids, err := bucket.ListBlocks(ctx, aslow)
	if err != nil {
		return nil, err
	}
	var ablocks []*block.Reader
	defer func() {
		for _, b := range ablocks {
			b.Close()
		}
	}()
	for _, id := range ids {
		b, err := bucket.OpenBlock(ctx, aslow, id, fresh, nil, &astats)
		if err != nil {
			return nil, err
		}
		ablocks = append(ablocks, b)
	}
	var tblocks []*thanosstore.Block
	for _, d := range promBlocks {
		b, err := thanosstore.OpenBlock(ctx, slow, thanosPrefix, filepath.Base(d), &tstats)
		if err != nil {
			return nil, err
		}
		tblocks = append(tblocks, b)
	}
	res.AerieMetaBytes, res.ThanosHeaderBytes = astats.MetaBytes.Load(), tstats.MetaBytes.Load()
	for _, b := range ablocks {
		res.AerieMetaMemory += b.MemoryBytes()
	}
	reps, err := bucket.Inspect(ctx, ast)
	if err != nil {
		return nil, err
	}
	for _, r := range reps {
		res.AerieMetricsBytes += r.MetricsBytes
		res.AerieIndexBytes += r.IndexBytes
		res.AerieTimestampBytes += r.TimestampBytes
		res.AerieWindowBytes += r.WindowBytes
	}
	// Value search's read: every series' block metrics, every block.
	start := time.Now()
	var ms []block.IntervalMetrics
	for _, b := range ablocks {
		sec, err := b.MetricsSection(ctx)
		if err != nil {
			return nil, err
		}
		for id := range uint32(b.Index().NumSeries()) {
			if ms, err = sec.Append(ms[:0], id); err != nil {
				return nil, err
			}
		}
	}
	res.MetricsMs = float64(time.Since(start).Microseconds()) / 1000
	res.MetricsGets = astats.MetricsGets.Load()

	for _, q := range queries(w) {
		qr := QueryResult{Name: q.name, Range: q.rangeName}
		for _, inst := range q.instances {
			a0 := snapAerie(&astats)
			t0 := snapThanos(&tstats)
			start := time.Now()
			got, err := aerieSelect(ablocks, inst.mint, inst.maxt, inst.ms)
			if err != nil {
				return res, fmt.Errorf("%s: aerie: %w", q.name, err)
			}
			alat := time.Since(start)
			start = time.Now()
			want, err := thanosSelect(ctx, tblocks, inst.mint, inst.maxt, inst.ms)
			if err != nil {
				return res, fmt.Errorf("%s: thanos: %w", q.name, err)
			}
			tlat := time.Since(start)
			if d := diff(got, want); d != "" {
				return res, fmt.Errorf("%w: %s %v over [%d, %d]: %s", ErrMismatch, q.name, inst.ms, inst.mint, inst.maxt, d)
			}
			qr.Series += len(got)
			qr.Aerie.add(snapAerie(&astats).sub(a0), alat)
			qr.Thanos.add(snapThanos(&tstats).sub(t0), tlat)
			qr.Instances++
		}
		harness.Logf(cfg.Log, "%s %s %s: aerie %s; thanos %s", name, q.name, q.rangeName, qr.Aerie.summary(qr.Instances), qr.Thanos.summary(qr.Instances))
		res.Queries = append(res.Queries, qr)
	}
	return res, nil
}

const thanosPrefix = "thanos"

// blockSpan is a block's span in whole hours: "54h0m0s".
func blockSpan(mint, maxt int64) string {
	return (time.Duration(maxt-mint) * time.Millisecond).Truncate(time.Hour).String()
}

// load writes every row of w into both engines, all targets' rows of one
// tick per commit, moving both heads' closed partitions (Prometheus'
// complete 2 h windows) into blocks every simulated day.
func load(w workload.Workload, adb *tsdb.DB, pdb *promtsdb.DB) error {
	n := w.NumTargets()
	scr := make([]workload.Scraper, n)
	rows := make([]workload.Row, n)
	live := make([]bool, n)
	aref := make([][]storage.SeriesRef, n)
	pref := make([][]storage.SeriesRef, n)
	for t := range n {
		scr[t] = w.Scraper(t)
		live[t] = scr[t].Next(&rows[t])
		aref[t] = make([]storage.SeriesRef, len(w.Series(t)))
		pref[t] = make([]storage.SeriesRef, len(w.Series(t)))
	}
	lastFlush := w.MinTime()
	for {
		// The earliest pending tick across targets.
		tick := int64(math.MaxInt64)
		for t := range n {
			if live[t] {
				tick = min(tick, rows[t].T)
			}
		}
		if tick == math.MaxInt64 {
			return nil
		}
		aa := adb.Appender(context.Background())
		pa := pdb.Appender(context.Background())
		for t := range n {
			// One tick takes every target whose row is within an interval
			// of it (the targets' phases differ).
			for live[t] && rows[t].T < tick+w.Interval().Milliseconds() {
				series := w.Series(t)
				r := &rows[t]
				for i, v := range r.Values {
					if r.Present != nil && !r.Present[i] {
						continue
					}
					var err error
					if aref[t][i], err = aa.Append(aref[t][i], series[i], r.T, v); err != nil {
						return fmt.Errorf("aerie append %s: %w", series[i], err)
					}
					if pref[t][i], err = pa.Append(pref[t][i], series[i], r.T, v); err != nil {
						return fmt.Errorf("prometheus append %s: %w", series[i], err)
					}
				}
				live[t] = scr[t].Next(r)
			}
		}
		if err := aa.Commit(); err != nil {
			return err
		}
		if err := pa.Commit(); err != nil {
			return err
		}
		if tick-lastFlush >= 24*3600_000 {
			if err := adb.Compact(); err != nil { // the closed partitions
				return err
			}
			if err := promFlush(pdb, tick-promtsdb.DefaultBlockDuration); err != nil {
				return err
			}
			lastFlush = tick
		}
	}
}

// promFlush compacts Prometheus' head into 2 h blocks, a window at a time
// (as its own head compaction does), the windows that end by upto.
func promFlush(db *promtsdb.DB, upto int64) error {
	h := db.Head()
	if h.NumSeries() == 0 || h.MinTime() == math.MaxInt64 {
		return nil
	}
	const r = promtsdb.DefaultBlockDuration
	mint, maxt := h.MinTime(), h.MaxTime()
	for lo := mint - ((mint%r)+r)%r; lo <= maxt && (upto == math.MaxInt64 || lo+r <= upto); lo += r {
		if err := db.CompactHead(promtsdb.NewRangeHead(h, lo, lo+r-1)); err != nil {
			return err
		}
	}
	return nil
}

// sample is one answer point.
type sample struct {
	T int64
	V float64
}

// aerieSelect runs one selection on every overlapping block in parallel
// and merges the answers by series.
func aerieSelect(blocks []*block.Reader, mint, maxt int64, ms []*labels.Matcher) (map[string][]sample, error) {
	var parts []func() (map[string][]sample, error)
	for _, b := range blocks {
		if m := b.Meta(); m.MaxTime > mint && m.MinTime <= maxt {
			parts = append(parts, func() (map[string][]sample, error) { return aerieBlockSelect(b, mint, maxt, ms) })
		}
	}
	return mergeParallel(parts)
}

// mergeParallel runs parts (one per block) concurrently and merges their
// answers by series, in time order; the first error wins.
func mergeParallel(parts []func() (map[string][]sample, error)) (map[string][]sample, error) {
	out := map[string][]sample{}
	var mu sync.Mutex
	var g errgroup.Group
	for _, part := range parts {
		g.Go(func() error {
			got, err := part()
			mu.Lock()
			defer mu.Unlock()
			for k, v := range got {
				out[k] = append(out[k], v...)
			}
			return err
		})
	}
	err := g.Wait()
	for k, v := range out {
		if len(v) == 0 {
			delete(out, k)
			continue
		}
		slices.SortFunc(v, func(a, b sample) int { return cmp.Compare(a.T, b.T) })
	}
	return out, err
}

func aerieBlockSelect(b *block.Reader, mint, maxt int64, ms []*labels.Matcher) (map[string][]sample, error) {
	sel, err := b.Select(mint, maxt, ms...)
	if err != nil {
		return nil, err
	}
	out := map[string][]sample{}
	var it chunkenc.Iterator
	for i := range sel.Series {
		s := &sel.Series[i]
		it = s.Iterator(it)
		var pts []sample
		for it.Next() != chunkenc.ValNone {
			t, v := it.At()
			pts = append(pts, sample{t, v})
		}
		if err := it.Err(); err != nil {
			return nil, err
		}
		if len(pts) > 0 {
			out[s.Labels.String()] = pts
		}
	}
	return out, nil
}

func thanosSelect(ctx context.Context, blocks []*thanosstore.Block, mint, maxt int64, ms []*labels.Matcher) (map[string][]sample, error) {
	var parts []func() (map[string][]sample, error)
	for _, b := range blocks {
		if b.MaxTime() <= mint || b.MinTime() > maxt {
			continue
		}
		parts = append(parts, func() (map[string][]sample, error) {
			ss, err := b.Select(ctx, mint, maxt, ms...)
			out := map[string][]sample{}
			for _, s := range ss {
				k := s.Labels.String()
				for i := range s.T {
					out[k] = append(out[k], sample{s.T[i], s.V[i]})
				}
			}
			return out, err
		})
	}
	return mergeParallel(parts)
}

// diff describes the first difference of two answers, or "".
func diff(a, b map[string][]sample) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%d series against %d", len(a), len(b))
	}
	for k, av := range a {
		bv, ok := b[k]
		if !ok {
			return fmt.Sprintf("series %s only in aerie's answer", k)
		}
		if len(av) != len(bv) {
			return fmt.Sprintf("series %s: %d samples against %d", k, len(av), len(bv))
		}
		for i := range av {
			if av[i].T != bv[i].T || math.Float64bits(av[i].V) != math.Float64bits(bv[i].V) {
				return fmt.Sprintf("series %s sample %d: %v against %v", k, i, av[i], bv[i])
			}
		}
	}
	return ""
}

// query is one kind of query (series count and range) and its instances.
type query struct {
	name, rangeName string
	instances       []instance
}

type instance struct {
	mint, maxt int64
	ms         []*labels.Matcher
}

// queries builds, for 1, 10 and 100 series over 1 h, 24 h and 7 d, three
// instances each, ending at three points of the last day.
// node: metric families of one target, in slot order, until the count is
// reached (a host's dashboard); tsbs: one cpu field across hosts.
func queries(w workload.Workload) []query {
	ranges := []struct {
		name string
		d    time.Duration
	}{{"1h", time.Hour}, {"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour}}
	var out []query
	for _, n := range []int{1, 10, 100} {
		for _, r := range ranges {
			q := query{name: fmt.Sprintf("%d series", n), rangeName: r.name}
			for k := range 3 {
				end := w.MaxTime() - int64(k)*5*3600_000
				q.instances = append(q.instances, instance{mint: end - r.d.Milliseconds() + 1, maxt: end, ms: selector(w, n, k)})
			}
			out = append(out, q)
		}
	}
	return out
}

func selector(w workload.Workload, n, k int) []*labels.Matcher {
	if w.Name() == "tsbs" {
		fields := []string{"cpu_usage_user", "cpu_usage_system", "cpu_usage_idle"}
		var hosts []string
		for h := range min(n, w.NumTargets()) {
			hosts = append(hosts, fmt.Sprintf("host_%d", (h+k*7)%w.NumTargets()))
		}
		return []*labels.Matcher{
			labels.MustNewMatcher(labels.MatchEqual, "__name__", fields[k%len(fields)]),
			labels.MustNewMatcher(labels.MatchRegexp, "hostname", strings.Join(hosts, "|")),
		}
	}
	// node: whole metric families of target k, from a slot that differs
	// per instance, until n series are covered.
	series := w.Series(k % w.NumTargets())
	start := (k * 97) % len(series)
	var names []string
	count := 0
	for i := 0; count < n && i < len(series); i++ {
		name := series[(start+i)%len(series)].Get("__name__")
		if slices.Contains(names, name) {
			continue
		}
		names = append(names, name)
		for _, s := range series {
			if s.Get("__name__") == name {
				count++
			}
		}
	}
	inst := series[0].Get("instance")
	return []*labels.Matcher{
		labels.MustNewMatcher(labels.MatchEqual, "instance", inst),
		labels.MustNewMatcher(labels.MatchRegexp, "__name__", strings.Join(names, "|")),
	}
}

// slowBucket delays every read request by delay: object storage's
// per-request latency.
type slowBucket struct {
	objstore.Bucket
	delay time.Duration
}

func (s *slowBucket) wait(ctx context.Context) error {
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *slowBucket) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	return s.Bucket.Get(ctx, name)
}

func (s *slowBucket) GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	return s.Bucket.GetRange(ctx, name, off, length)
}

func (s *slowBucket) Attributes(ctx context.Context, name string) (objstore.ObjectAttributes, error) {
	if err := s.wait(ctx); err != nil {
		return objstore.ObjectAttributes{}, err
	}
	return s.Bucket.Attributes(ctx, name)
}
