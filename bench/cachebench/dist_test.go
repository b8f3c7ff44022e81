package cachebench

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestZipfianShape: rank 0 is the most likely, frequencies fall with the
// rank, and rank 0's share is about 1/ζ(n, θ).
func TestZipfianShape(t *testing.T) {
	const n, draws = 1000, 200_000
	z := NewZipfian(n, ZipfianConstant)
	r := rand.New(rand.NewPCG(1, 2))
	counts := make([]int, n)
	for range draws {
		v := z.Next(r)
		require.Less(t, v, uint64(n))
		counts[v]++
	}
	require.Greater(t, counts[0], counts[1])
	require.Greater(t, counts[1], counts[10])
	require.Greater(t, counts[10], counts[100])
	require.Greater(t, counts[100], counts[999])
	want := draws / zeta(n, ZipfianConstant)
	require.InDelta(t, want, float64(counts[0]), want*0.05)
	var top10 int
	for _, c := range counts[:10] {
		top10 += c
	}
	require.Greater(t, top10, draws*35/100, "the first 1 %% of ranks draw over a third")
}

// TestLatestShape: the newest value is the most likely, and old values
// are rare.
func TestLatestShape(t *testing.T) {
	const n, draws = 10_000, 100_000
	l := NewLatest(n, ZipfianConstant)
	r := rand.New(rand.NewPCG(3, 4))
	counts := make([]int, n)
	for range draws {
		counts[l.Next(r)]++
	}
	require.Greater(t, counts[n-1], counts[n-2])
	require.Greater(t, counts[n-2], counts[n-100])
	var oldHalf int
	for _, c := range counts[:n/2] {
		oldHalf += c
	}
	require.Less(t, oldHalf, draws/10, "the older half of the range draws under a tenth")
}

func TestZipfianOne(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	require.Zero(t, NewZipfian(1, ZipfianConstant).Next(r))
	require.Zero(t, NewLatest(1, ZipfianConstant).Next(r))
}

// TestGenerate: the same seed gives the same queries, another seed
// others; every query lies in the data, on the step grid, within its
// workload's length bounds.
func TestGenerate(t *testing.T) {
	d := newDataset(Scales["small"])
	keys := d.Keys()
	for _, w := range Workloads {
		a := Generate(d, w, 2000, 7)
		require.Equal(t, a, Generate(d, w, 2000, 7), w.Name)
		require.NotEqual(t, a, Generate(d, w, 2000, 8), w.Name)
		keysSeen := map[int]int{}
		atEnd := 0
		for _, q := range a {
			require.GreaterOrEqual(t, q.Start, d.Start, w.Name)
			require.LessOrEqual(t, q.End, d.End(), w.Name)
			require.LessOrEqual(t, q.Start, q.End, w.Name)
			require.Zero(t, (q.Start-d.Start)%d.step(), w.Name)
			require.Zero(t, (q.End-d.Start)%d.step(), w.Name)
			length := time.Duration(q.End-q.Start+d.step()) * time.Second
			require.LessOrEqual(t, length, w.MaxLen(), w.Name)
			if q.Start > d.Start { // not clipped
				ok := false
				for _, lr := range w.Ranges {
					ok = ok || (length >= lr.Min && length <= lr.Max)
				}
				require.True(t, ok, "%s: length %v", w.Name, length)
			}
			require.Less(t, q.Key, len(keys))
			keysSeen[q.Key]++
			if q.End == d.End() {
				atEnd++
			}
		}
		require.Greater(t, len(keysSeen), len(keys)/4, "%s: keys spread", w.Name)
		require.Greater(t, atEnd, len(a)/20, "%s: the newest step is the most likely end", w.Name)
	}
}

// TestChunkStarts splits ranges into the 4-hour chunks they overlap.
func TestChunkStarts(t *testing.T) {
	const u = 4 * 3600
	for _, tc := range []struct {
		start, end int64
		want       []int64
	}{
		{0, 0, []int64{0}},
		{0, u - 1, []int64{0}},
		{0, u, []int64{0, u}},
		{u - 1, u, []int64{0, u}},
		{u + 60, 3*u + 60, []int64{u, 2 * u, 3 * u}},
		{-60, 60, []int64{-u, 0}},
		{1703980800, 1703980800 + 3600, []int64{1703980800}}, // a midnight: aligned
	} {
		require.Equal(t, tc.want, chunkStarts(tc.start, tc.end, u), "[%d, %d]", tc.start, tc.end)
	}
}

// TestChunkRoundTrip encodes and decodes a chunk, and rejects truncated
// and padded ones.
func TestChunkRoundTrip(t *testing.T) {
	d := newDataset(Scales["small"])
	k := Key{Sensor: 3, Fields: FieldSets[len(FieldSets)-1]}
	start := d.End() - 4*3600 + 60
	a := d.Expected(k, start, d.End())
	a[2].Points = nil // a field without points
	b := appendChunk(nil, start, a)
	got, err := decodeChunk(b, start, k.Fields)
	require.NoError(t, err)
	require.Empty(t, got.Diff(a))
	_, err = decodeChunk(b[:len(b)-1], start, k.Fields)
	require.ErrorIs(t, err, errChunk)
	_, err = decodeChunk(append(b, 0), start, k.Fields)
	require.ErrorIs(t, err, errChunk)
}

// TestParseQueryResponse reads InfluxDB 1.x's /query JSON with nulls.
func TestParseQueryResponse(t *testing.T) {
	body := `{"results":[{"statement_id":0,"series":[{"name":"sensor","columns":["time","temperature","humidity"],"values":[[60,21.5,null],[120,22,30.25]]}]}]}`
	a, err := parseQueryResponse([]byte(body), []string{"temperature", "humidity"})
	require.NoError(t, err)
	require.Equal(t, Answer{
		{Name: "temperature", Points: []Point{{60, "21.5"}, {120, "22"}}},
		{Name: "humidity", Points: []Point{{120, "30.25"}}},
	}, a)
	a, err = parseQueryResponse([]byte(`{"results":[{"statement_id":0}]}`), []string{"light"})
	require.NoError(t, err)
	require.Equal(t, Answer{{Name: "light"}}, a)
	_, err = parseQueryResponse([]byte(`{"results":[{"statement_id":0,"error":"database not found: bench"}]}`), []string{"light"})
	require.ErrorContains(t, err, "database not found")
}
