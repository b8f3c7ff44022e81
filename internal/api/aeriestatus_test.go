package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAerieStatus asks /status/aerie/storage and /status/aerie/series of a
// real engine holding an hour in blocks (flushed) and an hour in the head,
// with one quarantined block.
func TestAerieStatus(t *testing.T) {
	db, h := newAerie(t, Options{})
	write(t, db, dataset())
	require.NoError(t, db.FlushHead())
	var later []sample
	for _, s := range dataset() {
		s.t += int64(steps) * interval * 4 // past the flushed partitions
		later = append(later, s)
	}
	write(t, db, later)
	require.NoError(t, os.MkdirAll(filepath.Join(db.Dir(), "quarantine", "01BADBLOCK"), 0o755))
	blocks := db.Blocks()
	require.NotEmpty(t, blocks)

	type check func(t *testing.T, data json.RawMessage)
	storage := func(f func(t *testing.T, st StorageStatus)) check {
		return func(t *testing.T, data json.RawMessage) {
			var st StorageStatus
			require.NoError(t, json.Unmarshal(data, &st), "%s", data)
			f(t, st)
		}
	}
	series := func(f func(t *testing.T, ss ListOf[SeriesStatus])) check {
		return func(t *testing.T, data json.RawMessage) {
			var ss ListOf[SeriesStatus]
			require.NoError(t, json.Unmarshal(data, &ss), "%s", data)
			f(t, ss)
		}
	}
	for _, tc := range []struct {
		name    string
		method  string
		path    string
		params  url.Values
		code    int
		errType string
		check   check
	}{
		{name: "storage", path: StorageStatusPath, code: 200, check: storage(func(t *testing.T, st StorageStatus) {
			require.Equal(t, db.Head().NumSeries(), st.Head.Series)
			require.Equal(t, db.Head().NumGroups(), st.Head.Groups.Total)
			require.Len(t, st.Head.Groups.List, st.Head.Groups.Total)
			require.NotEmpty(t, st.Head.Partitions)
			for _, p := range st.Head.Partitions {
				require.Less(t, p.Start, p.End)
				if p.MinSampleTime != nil {
					require.GreaterOrEqual(t, *p.MinSampleTime, p.Start)
					require.Less(t, *p.MaxSampleTime, p.End)
				}
			}
			require.Equal(t, len(blocks), st.Blocks.Blocks.Total)
			require.Len(t, st.Blocks.Blocks.List, len(blocks))
			n := 0
			for _, l := range st.Blocks.ByLevel {
				n += l.Blocks
				require.Greater(t, l.BytesPerSample, 0.0)
			}
			require.Equal(t, len(blocks), n)
			b := st.Blocks.Blocks.List[0]
			require.Positive(t, b.Samples)
			require.Equal(t, float64(b.Bytes)/float64(b.Samples), b.BytesPerSample)
			require.Positive(t, st.Memory.BlockSize)
			require.Positive(t, st.WAL.Files)
			require.Positive(t, st.WAL.LastSegment)
			require.Equal(t, ListOf[string]{Total: 1, List: []string{"01BADBLOCK"}}, st.Quarantined)
			require.False(t, st.Flush.Running)
			require.Equal(t, BucketStatus{}, st.Bucket, "no bucket tier")
			require.False(t, b.Remote)
		})},
		{name: "storage limit", path: StorageStatusPath, params: vals("limit", "1"), code: 200, check: storage(func(t *testing.T, st StorageStatus) {
			require.Len(t, st.Head.Groups.List, 1)
			require.Equal(t, db.Head().NumGroups(), st.Head.Groups.Total)
			require.Len(t, st.Blocks.Blocks.List, 1)
			require.Equal(t, len(blocks), st.Blocks.Blocks.Total)
		})},
		{name: "storage limit 0", path: StorageStatusPath, params: vals("limit", "0"), code: 400, errType: "bad_data"},
		{name: "storage limit too big", path: StorageStatusPath, params: vals("limit", "10001"), code: 400, errType: "bad_data"},
		{name: "storage POST", method: http.MethodPost, path: StorageStatusPath, code: 405, errType: "bad_data"},
		{name: "series with group and blocks", path: SeriesStatusPath, params: vals("match[]", `up{instance="a:9090"}`), code: 200, check: series(func(t *testing.T, ss ListOf[SeriesStatus]) {
			require.Equal(t, 1, ss.Total)
			s := ss.List[0]
			require.Equal(t, `{__name__="up", instance="a:9090", job="api"}`, s.Labels.String())
			require.NotEmpty(t, s.Groups)
			g := s.Groups[0] // the first group it joined: its job and instance's
			require.Equal(t, "g:job=api,instance=a:9090,", g.Key)
			require.Equal(t, g.Series, len(g.Members), "all members listed")
			var names []string
			for _, m := range g.Members {
				require.Equal(t, "a:9090", m.Get("instance"), "grouped by job and instance")
				names = append(names, m.Get("__name__"))
			}
			require.Contains(t, names, "up")
			require.Contains(t, names, "req_duration_seconds_count")
			require.Equal(t, len(blocks), s.Blocks.Total, "every block holds up of a")
			require.Len(t, s.Blocks.List, s.Blocks.Total)
		})},
		{name: "series only in the head", path: SeriesStatusPath, params: vals("match[]", `sparse`, "start", sec(later[0].t)), code: 200, check: series(func(t *testing.T, ss ListOf[SeriesStatus]) {
			require.Equal(t, 1, ss.Total)
			require.NotEmpty(t, ss.List[0].Groups)
		})},
		{name: "series limit", path: SeriesStatusPath, params: vals("match[]", `up`, "limit", "1"), code: 200, check: series(func(t *testing.T, ss ListOf[SeriesStatus]) {
			require.Equal(t, 3, ss.Total)
			require.Len(t, ss.List, 1)
		})},
		{name: "series none", path: SeriesStatusPath, params: vals("match[]", `nothing_here`), code: 200, check: series(func(t *testing.T, ss ListOf[SeriesStatus]) {
			require.Equal(t, ListOf[SeriesStatus]{List: []SeriesStatus{}}, ss)
		})},
		{name: "series no match", path: SeriesStatusPath, code: 400, errType: "bad_data"},
		{name: "series bad selector", path: SeriesStatusPath, params: vals("match[]", `up{`), code: 400, errType: "bad_data"},
		{name: "series bad limit", path: SeriesStatusPath, params: vals("match[]", `up`, "limit", "x"), code: 400, errType: "bad_data"},
		{name: "series end before start", path: SeriesStatusPath, params: vals("match[]", `up`, "start", "10", "end", "5"), code: 400, errType: "bad_data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			code, body := do(t, h, method, tc.path, tc.params)
			require.Equal(t, tc.code, code, "%s", body)
			r := decode(t, body)
			if tc.errType != "" {
				require.Equal(t, "error", r.Status)
				require.Equal(t, tc.errType, r.ErrorType)
				require.NotEmpty(t, r.Error)
				return
			}
			require.Equal(t, "success", r.Status)
			tc.check(t, r.Data)
		})
	}
}
