package thanosstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/thanos-io/objstore"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) {
		if fixtureRoot != "" {
			os.RemoveAll(fixtureRoot)
		}
	}))
}

// Fixture: one real prometheus/tsdb block of float series, built once.
const (
	fixtureStart    = int64(1_700_000_000_000)
	fixtureStep     = int64(15_000)
	fixtureSamples  = 3 * 3600 * 1000 / 15_000 // 3 h at 15 s
	fixtureBlockLen = 4 * 3600 * 1000
)

type fixture struct {
	dir string // the block's directory
	id  string
}

var (
	fixtureOnce sync.Once
	fixtureRoot string
	fixtureVal  fixture
	fixtureErr  error
)

// floatBlock returns the shared block: 280 series over 3 h at 15 s, of
// cpu_usage{job,instance,cpu}, mem_bytes{job,instance} and
// http_requests_total{job,instance,code}; every seventh instance only has
// the last hour, every fifth has a 20-minute gap after the first hour.
func floatBlock(t testing.TB) fixture {
	t.Helper()
	fixtureOnce.Do(func() {
		if fixtureRoot, fixtureErr = os.MkdirTemp("", "thanosstore-test-"); fixtureErr != nil {
			return
		}
		fixtureVal, fixtureErr = writeBlock(filepath.Join(fixtureRoot, "float"), appendFloatSeries)
	})
	if fixtureErr != nil {
		t.Fatal(fixtureErr)
	}
	return fixtureVal
}

func appendFloatSeries(app storage.Appender) error {
	rng := rand.New(rand.NewPCG(1, 2))
	jobs := []string{"api", "db", "cache"}
	var sets []labels.Labels
	for i := range 40 {
		job, inst := jobs[i%3], fmt.Sprintf("host-%d", i)
		for cpu := range 4 {
			sets = append(sets, labels.FromStrings("__name__", "cpu_usage", "job", job, "instance", inst, "cpu", fmt.Sprint(cpu)))
		}
		sets = append(sets, labels.FromStrings("__name__", "mem_bytes", "job", job, "instance", inst))
		for _, code := range []string{"200", "500"} {
			sets = append(sets, labels.FromStrings("__name__", "http_requests_total", "job", job, "instance", inst, "code", code))
		}
	}
	for _, lset := range sets {
		inst := lset.Get("instance")
		var n int
		fmt.Sscanf(inst, "host-%d", &n)
		v := rng.Float64() * 100
		for i := range fixtureSamples {
			t := fixtureStart + int64(i)*fixtureStep
			if n%7 == 3 && i < fixtureSamples*2/3 {
				continue // only the last hour
			}
			if n%5 == 1 && i >= 240 && i < 320 {
				continue // a gap after the first hour
			}
			switch lset.Get("__name__") {
			case "http_requests_total":
				v += float64(rng.IntN(10))
			case "mem_bytes":
				v = float64(1<<30 + rng.IntN(1<<20))
			default:
				v += rng.NormFloat64()
			}
			if _, err := app.Append(0, lset, t, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeBlock writes one block with the samples fill appends into a new
// directory under root and returns it.
func writeBlock(root string, fill func(storage.Appender) error) (fixture, error) {
	ctx := context.Background()
	w, err := tsdb.NewBlockWriter(slog.New(slog.DiscardHandler), root, fixtureBlockLen)
	if err != nil {
		return fixture{}, err
	}
	defer w.Close()
	app := w.Appender(ctx)
	if err := fill(app); err != nil {
		return fixture{}, err
	}
	if err := app.Commit(); err != nil {
		return fixture{}, err
	}
	id, err := w.Flush(ctx)
	if err != nil {
		return fixture{}, err
	}
	return fixture{dir: filepath.Join(root, id.String()), id: id.String()}, nil
}

// open uploads f to a new in-memory bucket under prefix "blocks" and opens it.
func open(t *testing.T, f fixture) (*Block, *countingBucket, *Stats) {
	t.Helper()
	bkt := &countingBucket{Bucket: objstore.NewInMemBucket()}
	ctx := context.Background()
	if err := Upload(ctx, bkt, "blocks", f.dir); err != nil {
		t.Fatal(err)
	}
	stats := new(Stats)
	b, err := OpenBlock(ctx, bkt, "blocks", f.id, stats)
	if err != nil {
		t.Fatal(err)
	}
	return b, bkt, stats
}

// querierSelect is the reference answer: prometheus/tsdb's block querier
// on the block directory, without series that have no samples in range.
func querierSelect(t *testing.T, dir string, mint, maxt int64, ms ...*labels.Matcher) []Series {
	t.Helper()
	blk, err := tsdb.OpenBlock(slog.New(slog.DiscardHandler), dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer blk.Close()
	q, err := tsdb.NewBlockQuerier(blk, mint, maxt)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	ss := q.Select(context.Background(), true, nil, ms...)
	var out []Series
	var it chunkenc.Iterator
	for ss.Next() {
		s := Series{Labels: ss.At().Labels()}
		it = ss.At().Iterator(it)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			if vt != chunkenc.ValFloat {
				t.Fatalf("%s: sample type %s in a float fixture", s.Labels, vt)
			}
			ts, v := it.At()
			s.T = append(s.T, ts)
			s.V = append(s.V, v)
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		if len(s.T) > 0 {
			out = append(out, s)
		}
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// diffSeries describes the first difference between got and want, or "".
func diffSeries(got, want []Series) string {
	for i := range min(len(got), len(want)) {
		g, w := got[i], want[i]
		if !labels.Equal(g.Labels, w.Labels) {
			return fmt.Sprintf("series %d: labels %s, want %s", i, g.Labels, w.Labels)
		}
		if len(g.T) != len(w.T) || len(g.V) != len(w.V) {
			return fmt.Sprintf("%s: %d timestamps and %d values, want %d", g.Labels, len(g.T), len(g.V), len(w.T))
		}
		for j := range g.T {
			if g.T[j] != w.T[j] || math.Float64bits(g.V[j]) != math.Float64bits(w.V[j]) {
				return fmt.Sprintf("%s: sample %d is (%d, %g), want (%d, %g)", g.Labels, j, g.T[j], g.V[j], w.T[j], w.V[j])
			}
		}
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d series, want %d", len(got), len(want))
	}
	return ""
}

// countingBucket counts, independently of Stats, the requests made to the
// bucket it wraps and the bytes read from their answers; it also records
// how many range GETs were in flight at once, each held for delay. When
// flipObject is set, range GETs of it see byte flipAt XORed with 0x5a.
// Set these fields only between Selects.
type countingBucket struct {
	objstore.Bucket
	delay      time.Duration
	flipObject string
	flipAt     int64

	requests, bytes, rangeGets atomic.Int64
	inFlight, maxInFlight      atomic.Int64
}

type countingReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (r countingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.n.Add(int64(n))
	return n, err
}

func (b *countingBucket) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	b.requests.Add(1)
	rc, err := b.Bucket.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	return countingReader{rc, &b.bytes}, nil
}

func (b *countingBucket) GetRange(ctx context.Context, name string, off, length int64) (io.ReadCloser, error) {
	b.requests.Add(1)
	b.rangeGets.Add(1)
	n := b.inFlight.Add(1)
	defer b.inFlight.Add(-1)
	for m := b.maxInFlight.Load(); n > m && !b.maxInFlight.CompareAndSwap(m, n); m = b.maxInFlight.Load() {
	}
	time.Sleep(b.delay)
	rc, err := b.Bucket.GetRange(ctx, name, off, length)
	if err != nil {
		return nil, err
	}
	if name == b.flipObject && b.flipAt >= off && b.flipAt < off+length {
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return nil, err
		}
		if i := b.flipAt - off; i < int64(len(data)) {
			data[i] ^= 0x5a
		}
		rc = io.NopCloser(bytes.NewReader(data))
	}
	return countingReader{rc, &b.bytes}, nil
}

func (b *countingBucket) Attributes(ctx context.Context, name string) (objstore.ObjectAttributes, error) {
	b.requests.Add(1)
	return b.Bucket.Attributes(ctx, name)
}

func (b *countingBucket) Iter(ctx context.Context, dir string, f func(string) error, opts ...objstore.IterOption) error {
	b.requests.Add(1)
	return b.Bucket.Iter(ctx, dir, f, opts...)
}

func (b *countingBucket) reset() {
	b.requests.Store(0)
	b.bytes.Store(0)
	b.rangeGets.Store(0)
	b.maxInFlight.Store(0)
}
