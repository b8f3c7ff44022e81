package ingest

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/stretchr/testify/require"
)

// byRefAppendable counts the samples appended by ref without labels: the
// Influx fast path's.
type byRefAppendable struct {
	storage.Appendable
	byRef atomic.Int64
}

func (c *byRefAppendable) Appender(ctx context.Context) storage.Appender {
	return &byRefAppender{Appender: c.Appendable.Appender(ctx), c: c}
}

type byRefAppender struct {
	storage.Appender
	c *byRefAppendable
}

func (a *byRefAppender) Append(ref storage.SeriesRef, l labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	r, err := a.Appender.Append(ref, l, t, v)
	if err == nil && ref != 0 && l.IsEmpty() {
		a.c.byRef.Add(1)
	}
	return r, err
}

// influxBothPaths sends prime then body to a handler with its series cache
// and to one without, each over a fresh DB, and requires the same answer
// to body and the same stored samples. It returns how many of body's
// samples went by the fast path.
func influxBothPaths(t *testing.T, url string, prime, body []byte) int64 {
	t.Helper()
	var answers [2]string
	var stored [2]map[string][]sample
	var fast int64
	for i := range answers {
		db := openDB(t, nil)
		ca := &byRefAppendable{Appendable: db}
		h := NewInfluxHandler(ca, Options{Now: func() time.Time { return testNow }, BatchSamples: 1 << 30}).(*influxHandler)
		if i == 1 {
			h.cache = nil
		}
		serve(t, h, request{url: url, body: prime})
		before := ca.byRef.Load()
		rec := serve(t, h, request{url: url, body: body})
		fast = max(fast, ca.byRef.Load()-before)
		answers[i] = rec.Result().Status + " " + rec.Body.String()
		stored[i] = dump(t, db)
	}
	require.Equal(t, answers[1], answers[0], "the answer to %q after %q depends on the series cache", body, prime)
	requireSamples(t, stored[1], stored[0])
	return fast
}

// TestInfluxFastPath: a line of known series with plainly written values
// goes by the fast path; every other line goes to the full one, and the
// answers and stored samples are those of a handler without the cache.
func TestInfluxFastPath(t *testing.T) {
	prime := []byte("cpu,host=a usage=1.5,idle=2i,ok=t 1000\n")
	for _, tc := range []struct {
		line string
		fast int64 // samples by the fast path
	}{
		{"cpu,host=a usage=2.5,idle=3i,ok=f 2000", 3},
		{"cpu,host=a idle=4u,ok=TRUE,usage=-1e3 3000", 3}, // other order
		{"cpu,host=a usage=.5", 1},                        // no timestamp
		{"  cpu,host=a usage=7 4000", 1},                  // leading blanks
		{"\tcpu,host=a usage=7 4000", 0},                  // a tab: the decoder refuses it
		{" \tcpu,host=a usage=7 4000", 0},
		{"cpu,host=a usage=-0 -5000", 1},
		{"cpu,host=a usage=1,usage=2 6000", 1}, // duplicate: the second is rejected
		{"cpu,host=a usage=1,new=2 7000", 0},   // a new field
		{"cpu,host=b usage=1 7000", 0},         // a new series
		{"cpu,host=a usage=-Inf 8000", 0},
		{"cpu,host=a usage=NaN 8000", 0},
		{"cpu,host=a usage=1e400 8000", 0},
		{"cpu,host=a usage=+1 8000", 0},
		{"cpu,host=a usage=0x1p3 8000", 1}, // strconv's syntax, as the decoder
		{"cpu,host=a usage=1_0 8000", 1},
		{"cpu,host=a usage=\"s\" 8000", 0},
		{"cpu,host=a usage=yes 8000", 0},
		{"cpu,host=a idle=9007199254740993i 8000", 0},
		{"cpu,host=a idle=18446744073709551615u 8000", 0},
		{"cpu,host=a idle=1.5i 8000", 0},
		{"cpu,host=a usage=1  8000", 0},
		{"cpu,host=a usage=1 8000 ", 0},
		{"cpu,host=a  usage=1 8000", 0},
		{"cpu,host=a usage=1 8x00", 0},
		{"cpu,host=a usage=1 99999999999999999999", 0},
		{"cpu,host=a usage=1,", 0},
		{"cpu,host=a usage=1,=2 8000", 0},
		{"cpu,host=a usa\\ ge=1 8000", 0},
		{"cpu,host=a usage=1\t8000", 0},
		{"cpu,host=a usage=1\r8000", 0},
		{"cpu,host=a usage", 0},
		{"cpu,host=a", 0},
		{"cpu,host=a ", 0},
	} {
		t.Run(tc.line, func(t *testing.T) {
			for _, url := range []string{"/write?precision=ms", "/api/v2/write?precision=s"} {
				fast := influxBothPaths(t, url, prime, []byte(tc.line+"\n"))
				require.Equal(t, tc.fast, fast, "samples by the fast path for %s", url)
			}
		})
	}
}

// FuzzInfluxFastPath holds the fast path to the full one: after prime
// fills the cache, body is answered and stored as without the cache.
func FuzzInfluxFastPath(f *testing.F) {
	f.Add([]byte("cpu,host=a usage=1.5,idle=2i 1000\n"), []byte("cpu,host=a usage=2.5,idle=3i 2000\ncpu,host=a idle=1u,usage=-Inf\n"), uint8(0))
	f.Add([]byte("m f=1,g=t\nm,t=1 f=2\n"), []byte("m g=f,f=3 5\nm,t=1 f=1e-3 -7\nm f=\"x\",g=T 9"), uint8(1))
	f.Add([]byte("m f=1 1\n"), []byte("\tm f=2 2\n m f=3 3\n"), uint8(2))
	f.Fuzz(func(t *testing.T, prime, body []byte, mode uint8) {
		if len(prime)+len(body) > 4096 || strings.Count(string(prime)+string(body), "\n") > 64 {
			return
		}
		influxBothPaths(t, influxURLs[int(mode)%len(influxURLs)], prime, body)
	})
}

var _ http.Handler = (*influxHandler)(nil)

// TestInfluxFastPathEscapes: lines whose measurement or tags hold escapes
// (where the cache's series part and the decoder's could part ways) answer
// and store alike with and without the cache.
func TestInfluxFastPathEscapes(t *testing.T) {
	for _, tc := range [][2]string{
		{`m,t=a\\ b=1 f=2 1000`, `m,t=a\\ b=1 f=3 2000`},
		{`m,t=a\\ f=2 1000`, `m,t=a\\ f=3 2000`},
		{`m\\ x f=2 1000`, `m\\ x f=3 2000`},
		{`m,t=a\\\ b f=2 1000`, `m,t=a\\\ b f=3 2000`},
		{`m,t=a\ b f=2 1000`, `m,t=a\ b f=3 2000`},
		{`m,t=a\ b f=2 1000`, `m,t=a\ b g=3 2000`},
		{`m,t=a\\ f=2,g=1 1000`, `m,t=a\\ f=3,g=2 2000`},
		{`m,t\\=a f=2 1000`, `m,t\\=a f=3 2000`},
		{`m\,n,t=a f=2 1000`, `m\,n,t=a f=3 2000`},
	} {
		influxBothPaths(t, "/write?precision=ms", []byte(tc[0]+"\n"), []byte(tc[1]+"\n"))
	}
}

// TestLineFieldsWith: with adds only the fields it lacks, leaves the
// cached value it was given untouched, and sizes the copy to what it
// holds (it stays cached as long as its line's series are written).
func TestLineFieldsWith(t *testing.T) {
	mk := func(names ...string) []lineField {
		var fs []lineField
		for i, n := range names {
			fs = append(fs, lineField{n, refVal{storage.SeriesRef(i + 1), uint64(i)}})
		}
		return fs
	}
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
	lf := (*lineFields)(nil).with(mk(names...))
	if len(lf.fields) != 10 || cap(lf.fields) != 10 {
		t.Fatalf("new line of 10 fields: len %d cap %d, want 10 and 10", len(lf.fields), cap(lf.fields))
	}
	more := lf.with(mk("a", "k"))
	if len(more.fields) != 11 || len(lf.fields) != 10 {
		t.Fatalf("adding k: %d fields (the given one %d), want 11 (10)", len(more.fields), len(lf.fields))
	}
	if got := more.find([]byte("k"), 10); got.ref != 2 {
		t.Fatalf("k: ref %d, want 2", got.ref)
	}
	if got := more.find([]byte("a"), 0); got.ref != 1 {
		t.Fatalf("a: ref %d, want the first a's 1", got.ref)
	}
	if same := lf.with(nil); len(same.fields) != 10 || same.find([]byte("j"), 9).ref != 10 {
		t.Fatalf("with nothing: %d fields", len(same.fields))
	}
}
