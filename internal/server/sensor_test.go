package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestServeSensorAPI: aerie serve answers Peregreen's endpoints, and PromQL
// sees an uploaded sensor as the series of its name.
func TestServeSensorAPI(t *testing.T) {
	_, srv := serveForTest(t, Options{DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	base := srv.URL

	now := time.Now().Add(-time.Hour).UnixMilli() / 1000 * 1000
	var b strings.Builder
	for i := range int64(60) {
		fmt.Fprintf(&b, "%d,%d\n", now+i*1000, i)
	}
	resp, err := http.Post(base+"/upload/boiler_temp/csv/0-1-,/int16", "text/csv", strings.NewReader(b.String()))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	code, body := get(t, base+"/list")
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"boiler_temp"`)
	code, body = get(t, base+"/meta/boiler_temp")
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"type":"int16"`)
	require.Contains(t, body, `"count":60`)
	code, body = get(t, fmt.Sprintf("%s/extract/boiler_temp/%d-%d/0/cumsum/csv", base, now, now+59_000))
	require.Equal(t, 200, code, body)
	require.True(t, strings.HasSuffix(body, fmt.Sprintf("%d,1770\n", now+59_000)), body)
	code, body = get(t, fmt.Sprintf("%s/api/v1/query?time=%.3f&query=max_over_time(boiler_temp[2m])", base, float64(now+60_000)/1000))
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"59"]`)
}
