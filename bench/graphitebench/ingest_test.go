package graphitebench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeProm answers the three PromQL queries of checkAerie with count,
// series and sum, and /metrics with the given text.
func fakeProm(t *testing.T, count, series int64, sum float64, metrics string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			io.WriteString(w, metrics)
			return
		}
		q := r.URL.Query().Get("query")
		var v string
		switch {
		case strings.HasPrefix(q, "sum(count_over_time("):
			v = fmt.Sprint(count)
		case strings.HasPrefix(q, "count(count_over_time("):
			v = fmt.Sprint(series)
		case strings.HasPrefix(q, "sum(sum_over_time("):
			v = fmt.Sprint(sum)
		default:
			http.Error(w, "unexpected query "+q, http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,%q]}]}}`, v)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestCheckAerie: a lost point, a missing series or a wrong value fails
// the check with ErrMismatch; the data as sent pass.
func TestCheckAerie(t *testing.T) {
	d := dataset{Hosts: 2, Steps: 3, End: 1_700_000_000}
	ctx := context.Background()
	for _, tc := range []struct {
		name          string
		count, series int64
		sum           float64
		want          string
	}{
		{"as sent", d.points(), int64(d.series()), d.sum(), ""},
		{"lost point", d.points() - 1, int64(d.series()), d.sum(), "points stored"},
		{"missing series", d.points(), int64(d.series()) - 1, d.sum(), "series stored"},
		{"wrong value", d.points(), int64(d.series()), d.sum() + 1, "values sum"},
	} {
		srv := fakeProm(t, tc.count, tc.series, tc.sum, "")
		n, err := checkAerie(ctx, srv.Client(), srv.URL, d)
		require.Equal(t, tc.count, n, tc.name)
		if tc.want == "" {
			require.NoError(t, err, tc.name)
			continue
		}
		require.ErrorIs(t, err, ErrMismatch, tc.name)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
}

func TestReadCounters(t *testing.T) {
	srv := fakeProm(t, 0, 0, 0, `# HELP aerie_graphite_stored_total x
aerie_graphite_received_total{listener="plaintext_tcp"} 10
aerie_graphite_received_total{listener="pickle_tcp"} 5
aerie_graphite_stored_total{listener="plaintext_tcp"} 1.2e+07
aerie_graphite_rejected_total{listener="plaintext_tcp",reason="too_old"} 3
aerie_graphite_malformed_total{listener="plaintext_tcp"} 2
aerie_graphite_queue_length 7
`)
	c, err := readCounters(context.Background(), srv.Client(), srv.URL)
	require.NoError(t, err)
	require.Equal(t, aerieCounters{Received: 15, Stored: 12e6, Rejected: 3, Malformed: 2}, c)

	bad := fakeProm(t, 0, 0, 0, "aerie_graphite_stored_total{listener=\"x\"} many\n")
	_, err = readCounters(context.Background(), bad.Client(), bad.URL)
	require.ErrorContains(t, err, "many")
}

// TestSend: every byte of every payload reaches the server, one
// connection a payload, and send returns once the server has closed
// them all.
func TestSend(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	var got atomic.Int64
	var wg sync.WaitGroup
	conns := 0
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns++
			wg.Go(func() {
				n, _ := io.Copy(io.Discard, c)
				got.Add(n)
				c.Close()
			})
		}
	})
	p := [][]byte{[]byte(strings.Repeat("a.b 1 2\n", 100_000)), []byte("x 1 2\n"), nil}
	_, err = send(context.Background(), l.Addr().String(), p)
	require.NoError(t, err)
	require.Equal(t, int64(len(p[0])+len(p[1])), got.Load())
	l.Close()
	wg.Wait()
	require.Equal(t, 3, conns)

	_, err = send(context.Background(), l.Addr().String(), p[:1])
	require.ErrorContains(t, err, "client 0")
}
