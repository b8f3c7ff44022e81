package server

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/server/servertest"
)

// tsbsFields are TSBS cpu-only's ten fields.
var tsbsFields = []string{"usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait",
	"usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"}

// hostDay returns one host's lines over [from, to) every 10 s, in time
// order, as TSBS cpu-only writes them (one line per host per interval).
func hostDay(h int, from, to int64, rng *rand.Rand) []string {
	var out []string
	var b strings.Builder
	for ts := from; ts < to; ts += 10_000 {
		b.Reset()
		fmt.Fprintf(&b, "cpu,hostname=host_%d,region=eu-central-1,datacenter=eu-central-1a,rack=%d,os=Ubuntu16.04LTS,arch=x64 ", h, h%7)
		for i, f := range tsbsFields {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "%s=%d", f, rng.Intn(100))
		}
		fmt.Fprintf(&b, " %d", ts)
		out = append(out, b.String())
	}
	return out
}

// TestBackfillOverHTTP is issue 10's scenario: one day of TSBS cpu-only
// data sent to /write by two clients, each sending one host's whole day
// and then the next host's. Every sample is stored (counted back with
// PromQL), before and after a restart.
func TestBackfillOverHTTP(t *testing.T) {
	hosts, span := 20, int64(24*3600_000)
	if testing.Short() {
		hosts, span = 4, 6*3600_000
	}
	opts := Options{DataDir: filepath.Join(t.TempDir(), "data"), HTTPAddr: servertest.FreeAddr(t), Logger: slog.New(slog.DiscardHandler)}
	_, srv := serveForTest(t, opts)
	base := srv.URL
	end := time.Now().Add(-time.Hour).UnixMilli() / 10_000 * 10_000
	from := end - span
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for c := 0; c < 2; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(c)))
			for h := c; h < hosts; h += 2 {
				lines := hostDay(h, from, end, rng)
				for len(lines) > 0 {
					n := min(len(lines), 5000)
					resp, err := http.Post(base+"/write?precision=ms", "text/plain", strings.NewReader(strings.Join(lines[:n], "\n")+"\n"))
					if err != nil {
						errs <- err
						return
					}
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusNoContent {
						errs <- fmt.Errorf("host %d: %d %s", h, resp.StatusCode, body)
						return
					}
					lines = lines[n:]
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	want := hosts * int(span/10_000) * len(tsbsFields)
	count := func() int {
		total := 0
		for _, f := range tsbsFields { // one name at a time: count_over_time drops it
			q := fmt.Sprintf(`sum(count_over_time(cpu_%s[%dms]))`, f, span)
			_, body := get(t, base+"/api/v1/query?query="+url.QueryEscape(q)+"&time="+strconv.FormatFloat(float64(end-1)/1000, 'f', 3, 64))
			var r struct {
				Data struct{ Result []struct{ Value [2]any } }
			}
			require.NoError(t, json.Unmarshal([]byte(body), &r), body)
			require.Len(t, r.Data.Result, 1, "%s: %s", q, body)
			n, err := strconv.Atoi(r.Data.Result[0].Value[1].(string))
			require.NoError(t, err)
			total += n
		}
		return total
	}
	require.Equal(t, want, count(), "every sample stored and visible at once")
	_, metrics := get(t, base+"/metrics")
	require.NotContains(t, metrics, "aerie_rejected_samples_total{", "nothing rejected")
	require.Contains(t, metrics, "aerie_backfill_samples_total")
	// The same history through VictoriaMetrics' export and import: one
	// host's day exported, imported again (a no-op: same values), and
	// exported once more, byte for byte the same.
	export := func() string {
		q := url.Values{"match[]": {`{__name__=~"cpu_.*",hostname="host_1"}`}, "start": {strconv.FormatInt(from/1000, 10)}, "end": {strconv.FormatInt(end/1000, 10)}}
		code, body := get(t, base+"/api/v1/export?"+q.Encode())
		require.Equal(t, http.StatusOK, code, body)
		return body
	}
	exported := export()
	require.Equal(t, len(tsbsFields), strings.Count(exported, "\n"), "one line per series")
	samples := 0
	for _, line := range strings.Split(strings.TrimSpace(exported), "\n") {
		var l struct{ Timestamps []int64 }
		require.NoError(t, json.Unmarshal([]byte(line), &l))
		samples += len(l.Timestamps)
	}
	require.Equal(t, int(span/10_000)*len(tsbsFields), samples, "the host's day, every sample")
	resp, err := http.Post(base+"/api/v1/import", "application/json", strings.NewReader(exported))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	require.Equal(t, exported, export(), "re-importing an export changes nothing")
	require.Equal(t, want, count())

	srv.Stop()
	serveForTest(t, opts) // the same address: base is its URL too
	require.Equal(t, want, count(), "after a restart")
	require.Equal(t, exported, export(), "after a restart")
	t.Logf("%d hosts × %v × 10 fields: %d samples stored", hosts, time.Duration(span)*time.Millisecond, want)
}
