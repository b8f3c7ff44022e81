package sensor

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/bucket"
	"github.com/aerie-db/aerie/internal/tsdb"
)

// env is a DB, the service over it and an HTTP server with its routes;
// with a tier, blocks are moved to a filesystem bucket by ship.
type env struct {
	t    *testing.T
	dir  string
	bkt  *bucket.Bucket
	tier *bucket.Tier
	db   *tsdb.DB
	svc  *Service
	srv  *httptest.Server
}

func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir()}
	e.open(opts)
	t.Cleanup(e.close)
	return e
}

// newTierEnv is newEnv with the object-storage tier on.
func newTierEnv(t *testing.T, opts Options) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir()}
	var err error
	e.bkt, err = bucket.Open(bucket.Config{}, e.dir, nil, nil)
	require.NoError(t, err)
	e.tier = bucket.NewTier(e.bkt, 0, 1<<20)
	e.open(opts)
	t.Cleanup(func() {
		e.close()
		require.NoError(t, e.bkt.Close())
	})
	return e
}

// ship moves every block to the bucket (the tier's upload, at once).
func (e *env) ship() {
	require.NoError(e.t, e.db.ShipBlocks(context.Background()))
}

func (e *env) open(opts Options) {
	var err error
	o := &tsdb.Options{FlushCheckInterval: -1, PartitionRange: 2 * 3600_000, MaxFuture: 600_000}
	if e.tier != nil {
		o.Remote, o.LocalRetention = e.tier, 1
	}
	e.db, err = tsdb.Open(e.dir, o)
	require.NoError(e.t, err)
	opts.Dir = e.dir
	e.svc, err = New(e.db, opts)
	require.NoError(e.t, err)
	mux := http.NewServeMux()
	e.svc.Register(mux, nil)
	e.srv = httptest.NewServer(mux)
}

func (e *env) close() {
	if e.srv == nil {
		return
	}
	e.srv.Close()
	require.NoError(e.t, e.db.Close())
	e.srv = nil
}

// reopen restarts the DB and the service, with the data flushed to blocks.
func (e *env) reopen(opts Options) {
	require.NoError(e.t, e.db.FlushHead())
	require.NoError(e.t, e.db.FlushBackfill())
	require.NoError(e.t, e.db.CompactBlocks())
	e.close()
	e.open(opts)
}

func (e *env) do(method, path, body string) (int, string) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	require.NoError(e.t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(e.t, err)
	return resp.StatusCode, string(b)
}

// The tests' data start at t0, a whole hour (ms).
const (
	hour = int64(3600_000)
	t0   = 1_700_000_000_000 / hour * hour
)

// upload stores body, CSV of format 0-1-, (as walk writes it), as the
// float64 sensor name.
func (e *env) upload(name, body string) {
	e.t.Helper()
	code, msg := e.do("POST", "/upload/"+name+"/csv/0-1-,/float64", body)
	require.Equal(e.t, http.StatusOK, code, msg)
}

type pt struct {
	t int64
	v float64
}

// points returns the stored points of the series named name.
func (e *env) points(name string) []pt {
	e.t.Helper()
	q, err := e.db.Querier(math.MinInt64, math.MaxInt64)
	require.NoError(e.t, err)
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, name))
	var out []pt
	for ss.Next() {
		it := ss.At().Iterator(nil)
		for it.Next() != chunkenc.ValNone {
			t, v := it.At()
			out = append(out, pt{t, v})
		}
		require.NoError(e.t, it.Err())
	}
	require.NoError(e.t, ss.Err())
	return out
}
