package sensor

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

func TestUpload(t *testing.T) {
	e := newEnv(t, Options{SpoolPoints: 3, BatchPoints: 2})

	// CSV, value first, ';' separated, out of order, with a header.
	var b strings.Builder
	b.WriteString("value;ts\n")
	for _, i := range []int64{5, 1, 3, 0, 2, 4} {
		fmt.Fprintf(&b, "%d;%d\n", i*10, t0+i*1000)
	}
	code, body := e.do("POST", "/upload/temp/csv/1-0-;/int16", b.String())
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"points":6`)
	got := e.points("temp")
	require.Len(t, got, 6)
	for i, p := range got {
		require.Equal(t, pt{t0 + int64(i)*1000, float64(i * 10)}, p)
	}

	// A value that does not fit: 400 naming row, field and offset; nothing stored.
	code, body = e.do("POST", "/upload/temp/csv/0-1-,/int16", fmt.Sprintf("%d,1\n%d,2\n%d,40000\n", t0+10_000, t0+11_000, t0+12_000))
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "nothing stored")
	require.Contains(t, body, "row 3")
	require.Contains(t, body, `field "v"`)
	require.Len(t, e.points("temp"), 6)

	// Another type for the same sensor: 409.
	code, body = e.do("POST", "/upload/temp/csv/0-1-,/float64", fmt.Sprintf("%d,1.5\n", t0+10_000))
	require.Equal(t, http.StatusConflict, code, body)

	// JSON points, merged into the existing range; a bad type name.
	code, body = e.do("POST", "/upload/temp/json/default/int16", fmt.Sprintf(`[{"t":%d,"v":7},{"t":%d,"v":8}]`, t0+500, t0+20_000))
	require.Equal(t, http.StatusOK, code, body)
	require.Len(t, e.points("temp"), 8)
	code, body = e.do("POST", "/upload/other/json/default/int9", `[]`)
	require.Equal(t, http.StatusBadRequest, code, body)

	// Too old for the retention? The test DB keeps everything; far in the
	// future is refused, naming the row.
	code, body = e.do("POST", "/upload/temp/csv/0-1-,/int16", "9000000000000000,1\n")
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "row 1")

	// The registry survives a restart; the data too.
	e.reopen(Options{})
	typ, ok := e.svc.reg.Type("temp")
	require.True(t, ok)
	require.Equal(t, "int16", typ.String())
	require.Len(t, e.points("temp"), 8)
}

func TestParseRange(t *testing.T) {
	for _, c := range []struct {
		in       string
		from, to int64
		err      bool
	}{
		{"0-10", 0, 10, false},
		{"-10-5", -10, 5, false},
		{"-10--5", -10, -5, false},
		{"5-5", 5, 5, false},
		{"10-5", 0, 0, true},
		{"10", 0, 0, true},
		{"-", 0, 0, true},
		{"", 0, 0, true},
		{"a-b", 0, 0, true},
	} {
		from, to, err := parseRange(c.in)
		if c.err {
			require.Error(t, err, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		require.Equal(t, [2]int64{c.from, c.to}, [2]int64{from, to}, c.in)
	}
}

// FuzzParseRange: no panic; an accepted range prints back to itself.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"0-10", "-10--5", "1700000000000-1700003599999", "-", "5-", "-5", "9223372036854775807-9223372036854775807", "a-b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		from, to, err := parseRange(s)
		if err != nil {
			return
		}
		if from > to {
			t.Fatalf("%q: from %d > to %d", s, from, to)
		}
		from2, to2, err := parseRange(fmt.Sprintf("%d-%d", from, to))
		if err != nil || from2 != from || to2 != to {
			t.Fatalf("%q: %d-%d does not parse back: %v", s, from, to, err)
		}
	})
}

// TestUploadRuns: an upload in time order (or sorted in memory) older
// than the head's partitions goes straight into blocks as a history run;
// the part reaching the head's partitions, and a body out of order too
// large to sort in memory, go through the appender. Either way every point
// reads back, and the sensor's existing points win over an upload's.
func TestUploadRuns(t *testing.T) {
	e := newEnv(t, Options{SpoolPoints: 8, BatchPoints: 4})
	csv := func(ts []int64, v func(int64) float64) string {
		var b strings.Builder
		for _, x := range ts {
			fmt.Fprintf(&b, "%d,%v\n", x, v(x))
		}
		return b.String()
	}
	span := func(from int64, n int) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = from + int64(i)*1000
		}
		return out
	}
	val := func(x int64) float64 { return float64((x-t0)/1000) / 4 }
	want := func(ts []int64, v func(int64) float64) []pt {
		out := make([]pt, len(ts))
		for i, x := range slices.Sorted(slices.Values(ts)) {
			out[i] = pt{x, v(x)}
		}
		return out
	}
	runs := func() int64 {
		// Every run of this test is an upload's: the service's metric
		// counts what the engine wrote.
		n := e.db.BackfillStats().RunSamples
		require.EqualValues(t, n, testutil.ToFloat64(e.svc.m.runPoints), "aerie_sensor_upload_run_points_total")
		return n
	}

	// In time order, spooled to the file: one run.
	a := span(t0, 20)
	e.upload("a", csv(a, val))
	require.Equal(t, want(a, val), e.points("a"))
	require.EqualValues(t, 20, runs())

	// Out of order in memory, a point repeated with its value: sorted,
	// counted as given, stored once.
	b := []int64{t0 + 3000, t0 + 1000, t0 + 2000, t0 + 1000, t0}
	code, body := e.do("POST", "/upload/b/csv/0-1-,/float64", csv(b, val))
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"points":5`)
	require.Equal(t, want([]int64{t0, t0 + 1000, t0 + 2000, t0 + 3000}, val), e.points("b"))
	require.EqualValues(t, 24, runs())

	// Two values at one time: 400, nothing stored.
	code, body = e.do("POST", "/upload/c/csv/0-1-,/float64", fmt.Sprintf("%d,1\n%d,2\n", t0, t0))
	require.Equal(t, http.StatusBadRequest, code, body)
	require.Contains(t, body, "two values at timestamp")
	require.Empty(t, e.points("c"))

	// Out of order beyond the memory spool: the appender, as before.
	d := span(t0, 20)
	d[3], d[15] = d[15], d[3]
	e.upload("d", csv(d, val))
	require.Equal(t, want(d, val), e.points("d"))
	require.EqualValues(t, 24, runs())

	// Again over a's points with other values, and past them: a's first
	// values stay (first write wins), the new ones are added.
	a2 := span(t0+10_000, 20)
	e.upload("a", csv(a2, func(int64) float64 { return -1 }))
	got := e.points("a")
	require.Len(t, got, 30)
	for _, p := range got {
		if p.t < t0+20_000 {
			require.Equal(t, val(p.t), p.v)
		} else {
			require.Equal(t, -1.0, p.v)
		}
	}

	// A body reaching the head's partitions: its older part is a run, the
	// rest goes through the head.
	bound := e.db.RunBound()
	h := span(bound-5000, 10)
	before := runs()
	e.upload("h", csv(h, val))
	require.Equal(t, want(h, val), e.points("h"))
	require.EqualValues(t, 5, runs()-before)

	// All of it survives a restart, flushed and compacted.
	e.reopen(Options{})
	require.Equal(t, want(h, val), e.points("h"))
	require.Equal(t, want(d, val), e.points("d"))
	require.Len(t, e.points("a"), 30)
}
