package ingest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"
	remoteapi "github.com/prometheus/client_golang/exp/api/remote"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/storage/remote"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
)

// promRemoteWrite is Prometheus' own remote write handler (v0.310), the
// reference and the fallback.
func promRemoteWrite(app storage.Appendable) http.Handler {
	return remote.NewWriteHandler(slog.New(slog.DiscardHandler), nil, app,
		remoteapi.MessageTypes{remoteapi.WriteV1MessageType, remoteapi.WriteV2MessageType}, false, false, false)
}

func rwBody(t testing.TB, req *prompb.WriteRequest) []byte {
	b, err := req.Marshal()
	require.NoError(t, err)
	return b
}

func lbls(kv ...string) []prompb.Label {
	var out []prompb.Label
	for i := 0; i < len(kv); i += 2 {
		out = append(out, prompb.Label{Name: kv[i], Value: kv[i+1]})
	}
	return out
}

func rwSeeds(t testing.TB) map[string][]byte {
	now := testNow.UnixMilli()
	ok := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		{Labels: lbls("__name__", "up", "job", "a", "instance", "x"), Samples: []prompb.Sample{{Value: 1, Timestamp: now - 2000}, {Value: 0, Timestamp: now - 1000}}},
		{Labels: lbls("job", "a", "__name__", "cpu"), Samples: []prompb.Sample{{Value: math.NaN(), Timestamp: now}}},
		{Labels: lbls("__name__", "up", "job", "a", "instance", "x"), Samples: []prompb.Sample{{Value: 1, Timestamp: now}}}, // the first series again
	}}
	invalid := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		{Labels: lbls("job", "no-name"), Samples: []prompb.Sample{{Value: 1, Timestamp: now}}},
		{Labels: lbls("__name__", "d", "a", "1", "a", "2"), Samples: []prompb.Sample{{Value: 1, Timestamp: now}}},
		{Labels: lbls("__name__", "fine"), Samples: []prompb.Sample{{Value: 2, Timestamp: now}}},
	}}
	ahead := time.Now().UnixMilli() + maxAheadMs + 60_000 // both handlers read the clock
	ooo := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		{Labels: lbls("__name__", "m"), Samples: []prompb.Sample{{Value: 1, Timestamp: now}}},
		{Labels: lbls("__name__", "m"), Samples: []prompb.Sample{{Value: 2, Timestamp: ahead}}},
	}}
	hist := &prompb.WriteRequest{Timeseries: []prompb.TimeSeries{
		{Labels: lbls("__name__", "h"), Histograms: []prompb.Histogram{{Count: &prompb.Histogram_CountInt{CountInt: 1}, Timestamp: now}}},
	}}
	return map[string][]byte{"ok": rwBody(t, ok), "invalid labels": rwBody(t, invalid), "too far ahead": rwBody(t, ooo), "histogram": rwBody(t, hist), "garbage": []byte("\x0a\xff\xff"), "empty": nil}
}

// checkRemoteWrite posts body (uncompressed protobuf) to Aerie's handler
// and to Prometheus' handler over two fresh DBs and requires the same
// status class and the same stored samples, twice in a row (the second
// time through the series cache).
func checkRemoteWrite(t *testing.T, body []byte) {
	dbA, dbP := openDB(t, nil), openDB(t, nil)
	h := NewRemoteWriteHandler(dbA, Options{}, promRemoteWrite(dbA))
	ref := promRemoteWrite(dbP)
	comp := snappy.Encode(nil, body)
	for round := 0; round < 2; round++ {
		post := func(h http.Handler) *httptest.ResponseRecorder {
			r := httptest.NewRequest(http.MethodPost, "/api/v1/write", bytes.NewReader(comp))
			r.Header.Set("Content-Type", "application/x-protobuf")
			r.Header.Set("Content-Encoding", "snappy")
			r.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			return rec
		}
		a, p := post(h), post(ref)
		require.Equal(t, p.Code, a.Code, "round %d: Aerie %q, Prometheus %q", round, a.Body.String(), p.Body.String())
		require.Equal(t, fmt.Sprintf("%#v", dump(t, dbP)), fmt.Sprintf("%#v", dump(t, dbA)), "round %d", round)
	}
}

func TestRemoteWriteAsPrometheus(t *testing.T) {
	for name, body := range rwSeeds(t) {
		t.Run(name, func(t *testing.T) { checkRemoteWrite(t, body) })
	}
}

func FuzzRemoteWrite(f *testing.F) {
	for _, body := range rwSeeds(f) {
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body []byte) { checkRemoteWrite(t, body) })
}

func TestIsRemoteWrite1(t *testing.T) {
	for _, tc := range []struct {
		ct, enc string
		want    bool
	}{
		{"", "", true},
		{"application/x-protobuf", "snappy", true},
		{"application/x-protobuf;proto=prometheus.WriteRequest", "snappy", true},
		{"application/x-protobuf;proto=io.prometheus.write.v2.Request", "snappy", false},
		{"application/x-protobuf", "zstd", false},
		{"text/plain", "", false},
	} {
		hd := http.Header{}
		if tc.ct != "" {
			hd.Set("Content-Type", tc.ct)
		}
		if tc.enc != "" {
			hd.Set("Content-Encoding", tc.enc)
		}
		require.Equal(t, tc.want, isRemoteWrite1(hd), "%q %q", tc.ct, tc.enc)
	}
}

// TestDecodeSample: the common layout (value, then timestamp) and every
// other a client may write decode as gogo protobuf decodes them.
func TestDecodeSample(t *testing.T) {
	enc := func(s prompb.Sample) []byte {
		b, err := s.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var cases [][]byte
	for _, s := range []prompb.Sample{{Value: 1.5, Timestamp: 1700000000000}, {Value: -2, Timestamp: -1}, {Value: 0, Timestamp: 5}, {Value: 3}, {}, {Value: math.NaN(), Timestamp: 1}} {
		cases = append(cases, enc(s))
	}
	le := func(v float64) []byte { return binary.LittleEndian.AppendUint64(nil, math.Float64bits(v)) }
	cases = append(cases,
		append([]byte{0x10, 0x07, 0x09}, le(4)...),                                                                     // timestamp first
		append(append([]byte{0x09}, le(4)...), 0x10, 0x07, 0x10, 0x08),                                                 // timestamp twice: the last wins
		append(append([]byte{0x09}, le(4)...), 0x10, 0x87),                                                             // truncated varint
		append(append([]byte{0x09}, le(4)...), 0x10, 0x07, 0x18, 0x01),                                                 // an unknown field after
		append(append([]byte{0x09}, le(4)...), 0x10, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01), // varint too long
	)
	for i, b := range cases {
		var want prompb.Sample
		werr := want.Unmarshal(b)
		gotT, gotV, err := decodeSample(b)
		if (err != nil) != (werr != nil) {
			t.Errorf("case %d (% x): error %v, gogo's %v", i, b, err, werr)
			continue
		}
		if err == nil && (gotT != want.Timestamp || math.Float64bits(gotV) != math.Float64bits(want.Value)) {
			t.Errorf("case %d (% x): (%d, %v), gogo (%d, %v)", i, b, gotT, gotV, want.Timestamp, want.Value)
		}
	}
}

// FuzzConsumeField holds consumeField's shortcut to protowire's reading.
func FuzzConsumeField(f *testing.F) {
	for _, b := range [][]byte{{0x0a, 0x03, 'a', 'b', 'c'}, {0x12, 0x05, 1}, {0x02, 0x00}, {0x0a, 0x80, 0x01}, {0x08, 0x96, 0x01}, {0x0a}} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		num, typ, n, m := consumeField(b)
		wnum, wtyp, wn := protowire.ConsumeTag(b)
		if wn < 0 {
			if n != wn {
				t.Fatalf("% x: tag length %d, protowire %d", b, n, wn)
			}
			return
		}
		wm := protowire.ConsumeFieldValue(wnum, wtyp, b[wn:])
		if num != wnum || typ != wtyp || n != wn || m != wm {
			t.Fatalf("% x: (%d, %d, %d, %d), protowire (%d, %d, %d, %d)", b, num, typ, n, m, wnum, wtyp, wn, wm)
		}
	})
}
