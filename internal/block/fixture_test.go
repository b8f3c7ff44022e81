package block

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/index"
	"github.com/aerie-db/aerie/internal/mathx"
)

var update = flag.Bool("update", false, "rewrite the block fixtures under testdata/ (only the current index version)")

// The fixtures: a block over three hours, two groups of job "fix" and a
// third group holding a series only in the last hour.
const (
	fixtureMinT = int64(1_699_999_200_000) // an hour boundary
	fixtureMaxT = fixtureMinT + 3*3600_000
	fixtureRows = 180 // one a minute, 7 s into it
)

type fixtureSeries struct {
	lset labels.Labels
	ts   []int64
	vs   []float64
}

// fixtureGroups returns the fixture block's groups: ts and columns.
func fixtureGroups() ([][]int64, [][]Column) {
	ts := make([]int64, fixtureRows)
	for i := range ts {
		ts[i] = fixtureMinT + int64(i)*60_000 + 7_000
	}
	col := func(name, inst string) Column {
		return Column{Labels: labels.FromStrings("__name__", name, "instance", inst, "job", "fix"),
			Values: make([]float64, fixtureRows), Present: make([]bool, fixtureRows)}
	}
	temp, ctr := col("temp_celsius", "a"), col("requests_total", "a")
	ratio := col("ratio", "b")
	for i := range ts {
		// Fixed resolution 0.01, a daily-looking cycle.
		temp.Values[i] = math.Round((21.5+3*math.Sin(float64(i)/29))*100) / 100
		temp.Present[i] = true
		// An integer counter with a ten-minute gap.
		ctr.Values[i] = float64(1000 + i*i%37 + 40*i)
		ctr.Present[i] = i < 100 || i >= 110
		// Unquantized floats, NaNs and one stale marker.
		ratio.Values[i] = float64(i) / 7
		switch {
		case i%50 == 0:
			ratio.Values[i] = math.NaN()
		case i == 120:
			ratio.Values[i] = math.Float64frombits(value.StaleNaN)
		}
		ratio.Present[i] = i%13 != 5
	}
	late := col("late", "c")
	lts := ts[120:]
	late.Values, late.Present = make([]float64, len(lts)), make([]bool, len(lts))
	for i := range lts {
		late.Values[i] = -0.5 * float64(i%9)
		late.Present[i] = true
	}
	return [][]int64{ts, ts, lts}, [][]Column{{temp, ctr}, {ratio}, {late}}
}

// fixtureWant returns each series' samples (NaNs included) by labels.
func fixtureWant() map[string]fixtureSeries {
	out := map[string]fixtureSeries{}
	tss, cols := fixtureGroups()
	for g, cs := range cols {
		for _, c := range cs {
			s := fixtureSeries{lset: c.Labels}
			for i, t := range tss[g] {
				if c.Present[i] {
					s.ts, s.vs = append(s.ts, t), append(s.vs, c.Values[i])
				}
			}
			out[c.Labels.String()] = s
		}
	}
	return out
}

// writeFixture writes the fixture block with index version version into
// dir/block and its tagdict into dir/tagdict.
func writeFixture(t *testing.T, dir string, version uint8) {
	t.Helper()
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	dict, err := index.OpenTagDict(filepath.Join(dir, "tagdict"))
	require.NoError(t, err)
	defer dict.Close()
	w, err := NewWriter(dir, fixtureMinT, fixtureMaxT, dict, WriterOptions{})
	require.NoError(t, err)
	require.Equal(t, IndexVersion, version, "this code writes index version %d only", IndexVersion)
	tss, cols := fixtureGroups()
	for g := range tss {
		require.NoError(t, w.AddGroup(tss[g], cols[g]))
	}
	bdir, _, err := w.Finish()
	require.NoError(t, err)
	require.NoError(t, os.Rename(bdir, filepath.Join(dir, "block")))
}

// openFixture copies the fixture in dir to a temporary directory (opening
// a tagdict may repair it) and opens it.
func openFixture(t *testing.T, dir string) (*Reader, *index.TagDict) {
	t.Helper()
	tmp := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(tmp, "block"), 0o755))
	for _, name := range []string{"tagdict", "block/" + MetaFilename, "block/" + IndexFilename, "block/" + DataFilename} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(tmp, name), b, 0o644))
	}
	dict, err := index.OpenTagDict(filepath.Join(tmp, "tagdict"))
	require.NoError(t, err)
	t.Cleanup(func() { dict.Close() })
	r, err := Open(filepath.Join(tmp, "block"), dict, ReaderOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return r, dict
}

// fixtureV1Metrics are the block metrics of the version 1 fixture, as the
// version 1 writer computed them (naive float sums), by metric name.
var fixtureV1Metrics = map[string][]IntervalMetrics{
	"temp_celsius": {
		{Interval: 472222, Count: 60, Min: 21.5, Max: 24.5, Sum: 1417.25, SumSq: 33528.10150000001, First: 21.5, Last: 24.18},
		{Interval: 472223, Count: 60, Min: 19.04, Max: 24.14, Sum: 1298.2699999999998, SumSq: 28246.6807, First: 24.14, Last: 19.04},
		{Interval: 472224, Count: 60, Min: 18.5, Max: 21.17, Sum: 1154.83, SumSq: 22265.35849999999, First: 18.98, Last: 21.17},
	},
	"requests_total": {
		{Interval: 472222, Count: 60, Min: 1000, Max: 3363, Sum: 131894, SumSq: 3.18845788e+08, First: 1000, Last: 3363},
		{Interval: 472223, Count: 50, Min: 3411, Max: 5787, Sum: 223862, SumSq: 1.026623506e+09, First: 3411, Last: 5787},
		{Interval: 472224, Count: 60, Min: 5807, Max: 8196, Sum: 419947, SumSq: 2.968100965e+09, First: 5807, Last: 8196},
	},
	"ratio": {
		{Interval: 472222, Count: 53, Min: 0.14285714285714285, Max: 8.428571428571429, Sum: 223.57142857142858, SumSq: 1249.2857142857142, First: 0.14285714285714285, Last: 8.428571428571429},
		{Interval: 472223, Count: 55, Min: 8.571428571428571, Max: 17, Sum: 701.7142857142858, SumSq: 9300.489795918367, First: 8.571428571428571, Last: 17},
		{Interval: 472224, Count: 53, Min: 17.285714285714285, Max: 25.571428571428573, Sum: 1137.142857142857, SumSq: 24712.244897959186, First: 17.285714285714285, Last: 25.571428571428573},
	},
	"late": {
		{Interval: 472224, Count: 60, Min: -4, Max: negZero, Sum: -115.5, SumSq: 319.75, First: negZero, Last: -2.5},
	},
}

// fixtureV2Metrics are the block metrics of the version 2 fixture: the
// same but for Sum and SumSq of the decimal series, exact sums rounded
// once (invariant 7).
var fixtureV2Metrics = map[string][]IntervalMetrics{
	"temp_celsius": {
		{Interval: 472222, Count: 60, Min: 21.5, Max: 24.5, Sum: 1417.25, SumSq: 33528.1015, First: 21.5, Last: 24.18},
		{Interval: 472223, Count: 60, Min: 19.04, Max: 24.14, Sum: 1298.27, SumSq: 28246.6807, First: 24.14, Last: 19.04},
		{Interval: 472224, Count: 60, Min: 18.5, Max: 21.17, Sum: 1154.83, SumSq: 22265.3585, First: 18.98, Last: 21.17},
	},
	"requests_total": fixtureV1Metrics["requests_total"],
	"ratio":          fixtureV1Metrics["ratio"], // not decimal: summed as in version 1
	"late":           fixtureV1Metrics["late"],
}

var negZero = math.Copysign(0, -1)

// TestFixtureV1 opens the version 1 fixture (written by the code of
// before index version 2) and checks what Select and Metrics return.
func TestFixtureV1(t *testing.T) {
	const dir = "testdata/index_format_v1"
	if *update && IndexVersion == 1 {
		writeFixture(t, dir, 1)
	}
	checkFixture(t, dir, 1, fixtureV1Metrics)
}

// checkFixture opens the fixture in dir, checks that its index has version
// version, that Select gives the samples of fixtureWant and that Metrics
// follows the exactness rule (checkMetricsOf) against those samples and, if
// want is not nil, equals want bit for bit.
// TestFixtureV2 opens the version 2 fixture; -update rewrites it.
func TestFixtureV2(t *testing.T) {
	const dir = "testdata/index_format_v2"
	if *update && IndexVersion == 2 {
		writeFixture(t, dir, 2)
	}
	checkFixture(t, dir, 2, fixtureV2Metrics)
}

// TestFixtureV3 opens the version 3 fixture (data version 2: value
// columns in chunks).
func TestFixtureV3(t *testing.T) {
	checkFixture(t, "testdata/index_format_v3", 3, fixtureV2Metrics)
}

// TestFixtureV4 opens the version 4 fixture (data version 3: Rice codes
// too); -update rewrites it.
func TestFixtureV4(t *testing.T) {
	const dir = "testdata/index_format_v4"
	if *update && IndexVersion == 4 {
		writeFixture(t, dir, 4)
	}
	checkFixture(t, dir, 4, fixtureV2Metrics)

	// The writer is deterministic: the fixture's inputs encode to its
	// data and index byte for byte (so an encoder change that claims the
	// same bytes is held to it).
	bdir, _ := writeFixtureBlock(t, DataVersion)
	for _, f := range []string{DataFilename, IndexFilename} {
		want, err := os.ReadFile(filepath.Join(dir, "block", f))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(bdir, f))
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, got), "%s differs from the fixture's", f)
	}
}

func checkFixture(t *testing.T, dir string, version uint8, want map[string][]IntervalMetrics) {
	t.Helper()
	ib, err := os.ReadFile(filepath.Join(dir, "block", IndexFilename))
	require.NoError(t, err)
	require.Equal(t, version, ib[4], "index version of %s", dir)
	r, dict := openFixture(t, dir)
	samples := fixtureWant()
	require.Equal(t, len(samples), r.Index().NumSeries())

	sel, err := r.Select(math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "job", "fix"))
	require.NoError(t, err)
	require.Len(t, sel.Series, len(samples))
	var it chunkenc.Iterator
	for _, s := range sel.Series {
		w, ok := samples[s.Labels.String()]
		require.True(t, ok, "unexpected series %s", s.Labels)
		var ts []int64
		var vs []float64
		it = s.Iterator(it)
		for it.Next() == chunkenc.ValFloat {
			tt, v := it.At()
			ts, vs = append(ts, tt), append(vs, v)
		}
		require.NoError(t, it.Err())
		require.Equal(t, w.ts, ts, "%s", s.Labels)
		require.Len(t, vs, len(w.vs))
		for i := range vs {
			require.Equal(t, math.Float64bits(w.vs[i]), math.Float64bits(vs[i]), "%s sample %d", s.Labels, i)
		}
		ms, err := r.Metrics(context.Background(), s.ID)
		require.NoError(t, err)
		checkMetricsOf(t, ms, r.Meta().MetricInterval, w.ts, w.vs)
		if want != nil {
			wm := want[s.Labels.Get("__name__")]
			require.Len(t, ms, len(wm), "%s", s.Labels)
			for i := range wm {
				requireSameMetrics(t, wm[i], ms[i], "%s interval %d", s.Labels, i)
			}
		}
	}

	// Opened as the bucket tier opens it (its metadata object carries
	// meta.json and index unchanged), the block gives the same metrics.
	mb, err := os.ReadFile(filepath.Join(dir, "block", MetaFilename))
	require.NoError(t, err)
	remote, err := OpenRemote("remote", mb, ib, dict, r.f, nil)
	require.NoError(t, err)
	defer remote.Close()
	// And as the bucket opens it now: the index without its metrics
	// section, which a loader gives when it is first needed.
	head, sec, err := SplitIndex(ib)
	require.NoError(t, err)
	require.Len(t, head, len(ib)-len(sec))
	ld := &sectionLoader{b: sec}
	cut, err := OpenRemote("cut", mb, head, dict, r.f, ld)
	require.NoError(t, err)
	defer cut.Close()
	require.Equal(t, int64(len(sec)), cut.MetricsLen())
	require.Zero(t, ld.calls, "the section is loaded when metrics are first read, not at open")
	for id := range uint32(r.Index().NumSeries()) {
		want, err := r.Metrics(context.Background(), id)
		require.NoError(t, err)
		got, err := remote.Metrics(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, want, got)
		got, err = cut.Metrics(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, want, got)
		wi, wd, err := r.SeriesBytes(context.Background(), id)
		require.NoError(t, err)
		gi, gd, err := cut.SeriesBytes(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, [2]int64{wi, wd}, [2]int64{gi, gd})
		require.Positive(t, wi)
	}
	require.Positive(t, ld.calls)

	// A narrower range: the hour in the middle, one instance.
	sel, err = r.Select(fixtureMinT+3600_000, fixtureMinT+2*3600_000-1, labels.MustNewMatcher(labels.MatchEqual, "instance", "a"))
	require.NoError(t, err)
	require.Len(t, sel.Series, 2)
	for _, s := range sel.Series {
		n := 0
		it = s.Iterator(it)
		for it.Next() == chunkenc.ValFloat {
			n++
		}
		require.NoError(t, it.Err())
		if s.Labels.Get("__name__") == "temp_celsius" {
			require.Equal(t, 60, n)
		} else {
			require.Equal(t, 50, n) // the ten-minute gap
		}
	}
}

// requireSameMetrics requires want and got to be equal bit for bit.
func requireSameMetrics(t testing.TB, want, got IntervalMetrics, msg string, args ...any) {
	t.Helper()
	w := [...]uint64{uint64(want.Interval), want.Count, math.Float64bits(want.Min), math.Float64bits(want.Max),
		math.Float64bits(want.Sum), math.Float64bits(want.SumSq), math.Float64bits(want.First), math.Float64bits(want.Last)}
	g := [...]uint64{uint64(got.Interval), got.Count, math.Float64bits(got.Min), math.Float64bits(got.Max),
		math.Float64bits(got.Sum), math.Float64bits(got.SumSq), math.Float64bits(got.First), math.Float64bits(got.Last)}
	if w != g {
		t.Fatalf(msg+": got %+v, want %+v", append(args, got, want)...)
	}
}

// checkMetricsOf checks ms, the metrics of one series whose samples are
// ts, vs (in time order, NaNs included): Count, Min, Max, First and Last
// exact, Sum and SumSq close to the exact sums (checkSum).
func checkMetricsOf(t testing.TB, ms []IntervalMetrics, interval int64, ts []int64, vs []float64) {
	t.Helper()
	byIv := map[int64][]float64{}
	var ivs []int64
	for i, tt := range ts {
		if math.IsNaN(vs[i]) {
			continue
		}
		k := mathx.FloorDiv(tt, interval)
		if _, ok := byIv[k]; !ok {
			ivs = append(ivs, k)
		}
		byIv[k] = append(byIv[k], vs[i])
	}
	require.Len(t, ms, len(ivs))
	for i, m := range ms {
		require.Equal(t, ivs[i], m.Interval)
		xs := byIv[m.Interval]
		want := IntervalMetrics{Interval: m.Interval, Count: uint64(len(xs)), Min: xs[0], Max: xs[0], First: xs[0], Last: xs[len(xs)-1]}
		for _, x := range xs {
			want.Min, want.Max = math.Min(want.Min, x), math.Max(want.Max, x)
		}
		want.Sum, want.SumSq = m.Sum, m.SumSq // checked below
		requireSameMetrics(t, want, m, "interval %d", m.Interval)
		checkSum(t, m.Sum, xs, false)
		checkSum(t, m.SumSq, xs, true)
	}
}

// checkSum checks got, the Sum (or, if sq, the SumSq) of the values xs,
// against their exact sum S computed with math/big: with A = Σ|x| (Σx²),
// |got − S| ≤ 1e-12·|S| + 2⁻⁵⁰·A. The second term is the representation
// error of summing xs as the decimals they print as; for values of one
// sign it is below 1e-15·|S|. Infinities follow IEEE 754.
func checkSum(t testing.TB, got float64, xs []float64, sq bool) {
	t.Helper()
	const prec = 4400 // holds any sum of float64 squares exactly
	s, a := new(big.Float).SetPrec(prec), new(big.Float).SetPrec(prec)
	var posInf, negInf bool
	for _, x := range xs {
		if sq {
			x2 := new(big.Float).SetPrec(prec).SetFloat64(math.Abs(x))
			if math.IsInf(x, 0) {
				posInf = true
				continue
			}
			x2.Mul(x2, x2)
			s.Add(s, x2)
			a.Add(a, x2)
			continue
		}
		switch {
		case math.IsInf(x, 1):
			posInf = true
		case math.IsInf(x, -1):
			negInf = true
		default:
			s.Add(s, new(big.Float).SetFloat64(x))
			a.Add(a, new(big.Float).SetFloat64(math.Abs(x)))
		}
	}
	switch {
	case posInf && negInf:
		require.True(t, math.IsNaN(got), "sum of +Inf and -Inf: got %v", got)
		return
	case posInf:
		require.True(t, math.IsInf(got, 1), "sum with +Inf: got %v", got)
		return
	case negInf:
		require.True(t, math.IsInf(got, -1), "sum with -Inf: got %v", got)
		return
	}
	sf, _ := s.Float64()
	if math.IsInf(sf, 0) { // the exact sum overflows: any overflowing result will do
		require.True(t, math.IsInf(got, 0) || math.Abs(got) == math.MaxFloat64, "sum overflows, got %v", got)
		return
	}
	diff := new(big.Float).SetPrec(prec).Sub(new(big.Float).SetPrec(prec).SetFloat64(got), s)
	diff.Abs(diff)
	tol := new(big.Float).SetPrec(prec).Mul(new(big.Float).SetPrec(prec).Abs(s), big.NewFloat(1e-12))
	tol.Add(tol, new(big.Float).SetPrec(prec).Mul(a, big.NewFloat(math.Ldexp(1, -50))))
	if diff.Cmp(tol) > 0 {
		df, _ := diff.Float64()
		t.Fatalf("sum (sq %v) of %d values: got %v, exact %v, error %g", sq, len(xs), got, s.Text('g', 20), df)
	}
}

// TestMetricsDamageBehindChecksum damages a metrics record and fixes the
// section's checksums, as a writer's bug would leave it: Open must refuse
// the index with a *CorruptionError naming the file and the record's
// damaged byte, not hand out metrics that do not decode.
func TestMetricsDamageBehindChecksum(t *testing.T) {
	r, _ := openFixture(t, "testdata/index_format_v2")
	ipath := filepath.Join(r.Dir(), IndexFilename)
	orig, err := os.ReadFile(ipath)
	require.NoError(t, err)
	fstart := len(orig) - FooterLen
	p := fstart + SectionMetrics*20
	off := int(binary.LittleEndian.Uint64(orig[p:]))
	ln := int(binary.LittleEndian.Uint64(orig[p+8:]))
	require.Equal(t, int64(off), r.msec.at)

	// Series 0's record: its n, then b0 (the value domain) made invalid.
	rec := off + r.msec.offs[0]
	_, k := binary.Uvarint(orig[rec:])
	_, k2 := binary.Uvarint(orig[rec+k:])
	_, k3 := binary.Uvarint(orig[rec+k+k2:])
	b0 := rec + k + k2 + k3
	b := append([]byte(nil), orig...)
	b[b0] = 30
	binary.LittleEndian.PutUint32(b[p+16:], crc(b[off:off+ln]))
	binary.LittleEndian.PutUint32(b[len(b)-8:], crc(b[fstart:len(b)-8]))
	require.NoError(t, os.WriteFile(ipath, b, 0o644))
	r.Close()

	dict, err := index.OpenTagDict(filepath.Join(filepath.Dir(r.Dir()), "tagdict"))
	require.NoError(t, err)
	defer dict.Close()
	_, err = Open(r.Dir(), dict, ReaderOptions{})
	var ce *CorruptionError
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Equal(t, ipath, ce.File)
	require.Greater(t, ce.Offset, int64(b0), "%v", ce) // the header's checks fail after its last byte
	require.Less(t, ce.Offset, int64(b0+8), "%v", ce)
	require.ErrorContains(t, err, "bad value domain 30")

	// Undamaged, every series' metrics decode, also into a reused slice.
	require.NoError(t, os.WriteFile(ipath, orig, 0o644))
	r2, err := Open(r.Dir(), dict, ReaderOptions{})
	require.NoError(t, err)
	defer r2.Close()
	var buf []IntervalMetrics
	for id := range uint32(r2.Index().NumSeries()) {
		ms, err := r2.Metrics(context.Background(), id)
		require.NoError(t, err)
		buf, err = r2.AppendMetrics(context.Background(), buf[:0], id)
		require.NoError(t, err)
		require.Equal(t, ms, buf)
	}
}

// writeFixtureBlock writes the fixture's groups into a new block of data
// version v and returns its directory and dictionary.
func writeFixtureBlock(t *testing.T, v uint8) (string, *index.TagDict) {
	t.Helper()
	dir := t.TempDir()
	dict, err := index.OpenTagDict(filepath.Join(dir, "tagdict"))
	require.NoError(t, err)
	t.Cleanup(func() { dict.Close() })
	w, err := NewWriter(dir, fixtureMinT, fixtureMaxT, dict, WriterOptions{DataVersion: v})
	require.NoError(t, err)
	tss, cols := fixtureGroups()
	for g := range tss {
		require.NoError(t, w.AddGroup(tss[g], cols[g]))
	}
	bdir, _, err := w.Finish()
	require.NoError(t, err)
	return bdir, dict
}

// TestDataVersions writes the fixture block in each data version a writer
// can still write, reads back every sample, and checks that a data file
// whose version is not its index's is refused at byte 4.
func TestDataVersions(t *testing.T) {
	for _, v := range []uint8{1, 2, DataVersion} {
		bdir, dict := writeFixtureBlock(t, v)
		r, err := Open(bdir, dict, ReaderOptions{})
		require.NoError(t, err)
		want := fixtureWant()
		sel, err := r.Select(math.MinInt64, math.MaxInt64, labels.MustNewMatcher(labels.MatchEqual, "job", "fix"))
		require.NoError(t, err)
		require.Len(t, sel.Series, len(want))
		var it chunkenc.Iterator
		for _, s := range sel.Series {
			ws := want[s.Labels.String()]
			var n int
			it = s.Iterator(it)
			for it.Next() == chunkenc.ValFloat {
				tt, x := it.At()
				require.Equal(t, ws.ts[n], tt, "version %d %s", v, s.Labels)
				require.Equal(t, math.Float64bits(ws.vs[n]), math.Float64bits(x), "version %d %s", v, s.Labels)
				n++
			}
			require.NoError(t, it.Err())
			require.Equal(t, len(ws.ts), n, "version %d %s", v, s.Labels)
		}
		require.NoError(t, r.Close())

		path := filepath.Join(bdir, DataFilename)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		b[4] = v%3 + 1 // another version
		require.NoError(t, os.WriteFile(path, b, 0o644))
		_, err = Open(bdir, dict, ReaderOptions{})
		var ce *CorruptionError
		require.True(t, errors.As(err, &ce), "version %d: %v", v, err)
		require.Equal(t, int64(4), ce.Offset)
	}
	_, err := NewWriter(t.TempDir(), 0, 1, nil, WriterOptions{DataVersion: 9})
	require.Error(t, err)
}

// sectionLoader is a MetricsLoader over a metrics section held apart.
type sectionLoader struct {
	b     []byte
	calls int
}

func (l *sectionLoader) LoadMetrics(_ context.Context, r *Reader) (*MetricsSection, error) {
	l.calls++
	return r.ParseMetrics("metrics-object", l.b)
}

// TestSplitIndex checks that a cut index opens only with a loader, that
// the loader's section must match the footer's length and CRC32C, and
// that SplitIndex refuses what is not a whole index.
func TestSplitIndex(t *testing.T) {
	r, _ := openFixture(t, "testdata/index_format_v3")
	defer r.Close()
	ib, err := os.ReadFile(filepath.Join(r.Dir(), IndexFilename))
	require.NoError(t, err)
	mb, err := os.ReadFile(filepath.Join(r.Dir(), MetaFilename))
	require.NoError(t, err)
	dict, err := index.OpenTagDict(filepath.Join(filepath.Dir(r.Dir()), "tagdict"))
	require.NoError(t, err)
	defer dict.Close()
	head, sec, err := SplitIndex(ib)
	require.NoError(t, err)
	ctx := context.Background()

	// Whole and cut are not interchangeable.
	_, err = OpenRemote("cut", mb, head, dict, r.f, nil)
	var ce *CorruptionError
	require.ErrorAs(t, err, &ce)
	_, err = OpenRemote("whole", mb, ib, dict, r.f, &sectionLoader{b: sec})
	require.ErrorAs(t, err, &ce)
	require.ErrorContains(t, err, "not cut at the footer")

	for name, bad := range map[string][]byte{
		"short":   sec[:len(sec)-1],
		"long":    append(slices.Clone(sec), 0),
		"flipped": append([]byte{sec[0] ^ 1}, sec[1:]...),
	} {
		c, err := OpenRemote("cut", mb, head, dict, r.f, &sectionLoader{b: bad})
		require.NoError(t, err, name)
		_, err = c.Metrics(ctx, 0)
		require.ErrorAs(t, err, &ce, name)
		require.Equal(t, "metrics-object", ce.File, name)
		_, _, err = c.SeriesBytes(ctx, 0)
		require.Error(t, err, name)
		c.Close()
	}

	// MetricsFooter reads the same length and CRC from whole and cut
	// indexes, and refuses a damaged footer.
	for _, b := range [][]byte{ib, head} {
		ln, c, err := MetricsFooter(b)
		require.NoError(t, err)
		require.Equal(t, int64(len(sec)), ln)
		require.Equal(t, crc(sec), c)
	}
	bad := slices.Clone(ib)
	bad[len(bad)-FooterLen+SectionMetrics*20+8] ^= 1 // the section's length
	_, _, err = MetricsFooter(bad)
	require.ErrorAs(t, err, &ce)
	_, _, err = MetricsFooter(ib[:10])
	require.ErrorAs(t, err, &ce)

	// SplitIndex needs a whole index with the section last.
	for name, bad := range map[string][]byte{
		"empty":   nil,
		"cut":     head,
		"footer":  append(slices.Clone(ib[:len(ib)-9]), ib[len(ib)-8]^1, ib[len(ib)-8], ib[len(ib)-7], ib[len(ib)-6], ib[len(ib)-5], ib[len(ib)-4], ib[len(ib)-3], ib[len(ib)-2], ib[len(ib)-1]),
		"trailer": ib[:len(ib)-1],
	} {
		_, _, err := SplitIndex(bad)
		require.ErrorAs(t, err, &ce, name)
	}
}
