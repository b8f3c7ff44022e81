package ingest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/tsdb"
)

// testNow is the receipt time in tests.
var testNow = time.UnixMilli(1_700_000_000_789)

func openDB(t testing.TB, o *tsdb.Options) *tsdb.DB {
	t.Helper()
	if o == nil {
		o = &tsdb.Options{}
	}
	o.FlushCheckInterval = -1
	db, err := tsdb.Open(t.TempDir(), o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

type sample struct {
	T int64
	V float64
}

// dump returns every sample of db by series.
func dump(t testing.TB, db *tsdb.DB) map[string][]sample {
	t.Helper()
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	defer q.Close()
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".*"))
	out := map[string][]sample{}
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		it = s.Iterator(it)
		for it.Next() == chunkenc.ValFloat {
			ts, v := it.At()
			out[s.Labels().String()] = append(out[s.Labels().String()], sample{ts, v})
		}
		require.NoError(t, it.Err())
	}
	require.NoError(t, ss.Err())
	return out
}

func countSamples(m map[string][]sample) int {
	n := 0
	for _, s := range m {
		n += len(s)
	}
	return n
}

// request is one HTTP request to a handler.
type request struct {
	method  string // [POST]
	url     string
	body    []byte
	gzip    bool
	chunked bool // no Content-Length
	header  map[string]string
}

func serve(t testing.TB, h http.Handler, r request) *httptest.ResponseRecorder {
	t.Helper()
	body := r.body
	if r.gzip {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		_, err := zw.Write(body)
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		body = buf.Bytes()
	}
	method := r.method
	if method == "" {
		method = http.MethodPost
	}
	req := httptest.NewRequest(method, r.url, bytes.NewReader(body))
	if r.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	if r.chunked {
		req.ContentLength = -1
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// hook records Options.Metrics calls.
type hook struct {
	mu sync.Mutex
	n  map[string]int // reason → samples
}

func (h *hook) fn(_, reason string, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = map[string]int{}
	}
	h.n[reason] += n
}

var storedRe = regexp.MustCompile(`stored (\d+) samples, rejected (\d+)`)

// storedRejected reads the counts of an error message.
func storedRejected(t testing.TB, msg string) (int, int) {
	t.Helper()
	m := storedRe.FindStringSubmatch(msg)
	require.NotNil(t, m, "message without counts: %s", msg)
	s, _ := strconv.Atoi(m[1])
	r, _ := strconv.Atoi(m[2])
	return s, r
}

// countingAppendable counts the samples Append accepted and whose Commit
// succeeded.
type countingAppendable struct {
	storage.Appendable
	mu        sync.Mutex
	committed int
}

func (c *countingAppendable) Appender(ctx context.Context) storage.Appender {
	return &countingAppender{Appender: c.Appendable.Appender(ctx), c: c}
}

type countingAppender struct {
	storage.Appender
	c *countingAppendable
	n int
}

func (a *countingAppender) Append(ref storage.SeriesRef, l labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	ref, err := a.Appender.Append(ref, l, t, v)
	if err == nil {
		a.n++
	}
	return ref, err
}

func (a *countingAppender) Commit() error {
	err := a.Appender.Commit()
	if err == nil {
		a.c.mu.Lock()
		a.c.committed += a.n
		a.c.mu.Unlock()
	}
	return err
}

// failingAppendable fails every Commit after the first ok ones.
type failingAppendable struct {
	storage.Appendable
	ok int
}

func (f *failingAppendable) Appender(ctx context.Context) storage.Appender {
	return &failingAppender{Appender: f.Appendable.Appender(ctx), f: f}
}

type failingAppender struct {
	storage.Appender
	f *failingAppendable
}

func (a *failingAppender) Commit() error {
	if a.f.ok <= 0 {
		_ = a.Appender.Rollback()
		return errWAL
	}
	a.f.ok--
	return a.Appender.Commit()
}

var errWAL = &walError{}

type walError struct{}

func (*walError) Error() string { return "wal: write: no space left on device" }

var (
	nan = math.NaN()
	inf = math.Inf(1)
)

// requireSamples compares sample maps, NaN equal to NaN.
func requireSamples(t testing.TB, want, got map[string][]sample) {
	t.Helper()
	require.Equal(t, fmt.Sprint(want), fmt.Sprint(got))
}
