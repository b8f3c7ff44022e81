package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/pgarchive/pgtest"
)

// TestServePostgresArchive: with archive.postgres set, aerie serve keeps
// its rollup levels in PostgreSQL; `SELECT t, r FROM tv` gives exactly
// what /render gives for the same series at the same resolution; with
// PostgreSQL stopped, ingestion and rollups go on, and once it is back
// the archive catches up.
func TestServePostgresArchive(t *testing.T) {
	pg := pgtest.Start(t)
	dsn := pg.CreateDB(t, "aerie")
	dir := t.TempDir()
	cfg := writeFile(t, dir, "aerie.yml", fmt.Sprintf(`
aerie:
  graphite: {plaintext_tcp: "127.0.0.1:0", plaintext_udp: "", pickle_tcp: ""}
  statsd: {udp: "", tcp: ""}
  rollup:
    interval: 1h
    schemas:
      - {name: app, pattern: '^app\.', retentions: '10s:1h,1m:1d'}
  archive:
    postgres: {dsn: %q, max_flushes_per_second: 50}
`, dsn))
	s, srv := serveForTest(t, Options{DataDir: filepath.Join(dir, "data"), ConfigFile: cfg, Logger: slog.New(slog.DiscardHandler)})
	base := srv.URL
	ctx := t.Context()

	now := time.Now().Unix() / 600 * 600
	send := func(from, to int64) {
		t.Helper()
		conn, err := net.Dial("tcp", s.carbon.PlaintextTCPAddr().String())
		require.NoError(t, err)
		var b strings.Builder
		for ts := from; ts < to; ts += 10 {
			if ts%600 == 130 {
				continue // a gap: one point missing in every 10 minutes
			}
			fmt.Fprintf(&b, "app.web.latency %d %d\napp.db.latency %d %d\n", ts%7, ts, ts%11, ts)
		}
		_, err = conn.Write([]byte(b.String()))
		require.NoError(t, err)
		require.NoError(t, conn.Close())
	}
	// written says whether every point sent over [from, to) is visible,
	// of both series (the carbon listener commits them in its own time).
	written := func(from, to int64) bool {
		want := fmt.Sprintf(`"%d"`, (to-from)/10-(to-from)/600)
		for _, series := range []string{"app.web.latency", "app.db.latency"} {
			_, body := get(t, fmt.Sprintf("%s/api/v1/query?query=%s&time=%d", base,
				url.QueryEscape(fmt.Sprintf(`count_over_time({%q}[%ds])`, series, to-from)), to-1))
			if !strings.Contains(body, want) {
				return false
			}
		}
		return true
	}
	start := now - 3*3600
	send(start, now-3600)
	require.Eventually(t, func() bool { return written(start, now-3600) }, 10*time.Second, 50*time.Millisecond)
	require.NoError(t, s.rollups.RunOnce(ctx))

	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	// tv holds the 1m level of both series, once the archive caught up
	// with the level.
	tv := func(series string) map[int64]float64 {
		rows, err := conn.Query(ctx, `SELECT extract(epoch FROM t)::bigint, r FROM tv JOIN ds ON ds.id = tv.ds_id
			WHERE ds.name = $1 AND tv.level = '1m' ORDER BY t`, series)
		if err != nil {
			return nil // the archiver has not created the schema yet
		}
		out := map[int64]float64{}
		for rows.Next() {
			var ts int64
			var r float64
			require.NoError(t, rows.Scan(&ts, &r))
			out[ts] = r
		}
		require.NoError(t, rows.Err())
		return out
	}
	doneSec := s.rollups.Done("1m") / 1000
	require.Eventually(t, func() bool {
		got := tv(`{__name__="app.web.latency"}`)
		_, ok := got[doneSec-60]
		return ok
	}, 30*time.Second, 100*time.Millisecond)

	// /render of the same range at the same resolution: the 1m archive
	// (from is older than the raw archive's hour), up to the level's done
	// time (whisper's grid ends a step after until; newer buckets /render
	// computes from raw data, which the archive does not have yet).
	compare := func(series string, from, until int64) {
		t.Helper()
		code, body := get(t, fmt.Sprintf("%s/render?format=json&target=%s&from=%d&until=%d", base, series, from, until))
		require.Equal(t, 200, code, body)
		var out []struct {
			Datapoints [][2]*float64 `json:"datapoints"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &out), body)
		require.Len(t, out, 1)
		rows := tv(`{__name__="` + series + `"}`)
		n := 0
		for _, dp := range out[0].Datapoints {
			ts := int64(*dp[1])
			r, ok := rows[ts]
			if dp[0] == nil {
				require.False(t, ok, "%s at %d: /render has null, tv has %v", series, ts, r)
				continue
			}
			require.True(t, ok, "%s at %d: /render has %v, tv has no row", series, ts, *dp[0])
			require.Equal(t, math.Float64bits(*dp[0]), math.Float64bits(r), "%s at %d", series, ts)
			n++
		}
		require.Greater(t, n, 50, "%s: %d points compared", series, n)
	}
	compare("app.web.latency", start, doneSec-60)
	compare("app.db.latency", start, doneSec-60)

	// PostgreSQL stops: writes and rollups go on; back, the archive
	// catches up.
	require.NoError(t, pg.Stop())
	send(now-3600, now)
	// (The raw archive keeps an hour: older raw data are gone once rolled up.)
	require.Eventually(t, func() bool { return written(now-3600, now) }, 10*time.Second, 50*time.Millisecond)
	require.NoError(t, s.rollups.RunOnce(ctx))
	require.Greater(t, s.rollups.Done("1m")/1000, doneSec)
	doneSec = s.rollups.Done("1m") / 1000
	require.NoError(t, pg.Restart())
	conn.Close(ctx)
	conn, err = pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, ok := tv(`{__name__="app.web.latency"}`)[doneSec-60]
		return ok
	}, 60*time.Second, 200*time.Millisecond)
	compare("app.web.latency", start, doneSec-60)
}
