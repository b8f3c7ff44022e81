package ingest

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The seed corpora are in testdata/fuzz/Fuzz*/.

var influxURLs = []string{
	"/write",
	"/write?precision=s",
	"/write?precision=u",
	"/api/v2/write?precision=ms",
	"/api/v2/write?precision=ns",
}

func FuzzInfluxHandler(f *testing.F) {
	f.Add([]byte("cpu,host=a usage=1.5,idle=2i 1700000000000\n"), uint8(3))
	f.Fuzz(func(t *testing.T, body []byte, mode uint8) {
		url := influxURLs[int(mode)%len(influxURLs)]
		gz := mode&0x80 != 0
		checkIngest(t, body, func(ca *countingAppendable, o Options) http.Handler { return NewInfluxHandler(ca, o) },
			request{url: url, body: body, gzip: gz})
	})
}

func FuzzPromImportHandler(f *testing.F) {
	f.Add([]byte("# TYPE m counter\nm{a=\"b\"} 1 1000\n"), false)
	f.Fuzz(func(t *testing.T, body []byte, openMetrics bool) {
		r := request{url: "/api/v1/import/prometheus?extra_label=src=fuzz", body: body}
		if openMetrics {
			r.header = map[string]string{"Content-Type": omType}
		}
		checkIngest(t, body, func(ca *countingAppendable, o Options) http.Handler { return NewPromImportHandler(ca, o) }, r)
	})
}

// checkIngest sends r to a handler over a fresh DB and checks the
// contract: a 2xx or 4xx, the counts of the answer match the metrics hook
// and the DB (what Append accepted is all there, nothing is dropped at
// Commit), and the answer is deterministic.
func checkIngest(t *testing.T, body []byte, newHandler func(*countingAppendable, Options) http.Handler, r request) {
	var answers [2]string
	for i := range answers {
		db := openDB(t, nil)
		ca := &countingAppendable{Appendable: db}
		var hk hook
		h := newHandler(ca, Options{Metrics: hk.fn, Now: func() time.Time { return testNow }, BatchSamples: 1 << 30})
		rec := serve(t, h, r)
		answers[i] = rec.Body.String()
		stored := hk.n[ReasonOK]
		switch rec.Code {
		case http.StatusNoContent:
			// Only skipped string fields may accompany a 204.
			require.Len(t, hk.n, min(stored, 1)+min(hk.n[ReasonStringField], 1), "204 with rejections: %v", hk.n)
		case http.StatusBadRequest:
			s, rej := storedRejected(t, rec.Body.String())
			require.Equal(t, stored, s, rec.Body.String())
			require.Positive(t, rej, rec.Body.String())
		default:
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body.String())
		}
		got := countSamples(dump(t, db))
		require.Equal(t, ca.committed, got, "samples accepted by Append but missing from the DB")
		require.GreaterOrEqual(t, stored, got)
		require.Equal(t, stored > 0, got > 0)
		require.Empty(t, db.CommitRejections())
	}
	require.Equal(t, answers[0], answers[1], "answers differ for one body")
}
