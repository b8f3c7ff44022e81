package e2e

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// post sends body to base+path with the given headers and returns the
// status and the answer's body.
func post(base, path string, body []byte, header map[string]string) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return do(req)
}

// do sends req with httpClient and returns the status and the answer's
// body.
func do(req *http.Request) (int, string, error) {
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// expectSamples checks that the series selected by sel (extra labels, such
// as a db label, are allowed) is one series holding exactly want.
func expectSamples(t *testing.T, base, sel string, want []point) {
	t.Helper()
	now := time.Now().UnixMilli()
	got, err := rawSamples(base, sel, now-3_600_000, now)
	if err != nil {
		t.Errorf("%s: %v", sel, err)
		return
	}
	if len(got) != 1 {
		t.Errorf("%s: %d series, want 1: %v", sel, len(got), got)
		return
	}
	for k, ps := range got {
		if d := diffPoints(want, ps, 0); d != "" {
			t.Errorf("%s (%s): want %v, got %v: %s", sel, k, want, ps, d)
		}
	}
}

func gzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestInfluxLineProtocol writes line protocol as Telegraf does (InfluxDB
// 1.x /write with db and precision, 2.x /api/v2/write with org, bucket and
// precision, gzip bodies) and reads the values back with PromQL, named as
// in VictoriaMetrics: measurement_field{tags}.
func TestInfluxLineProtocol(t *testing.T) {
	g := newTestGroup(t)
	_, base := startTestAerie(t, g, "aerie", g.dataDir(t, "aerie"))
	sec := time.Now().Unix() - 120 // recent, whole seconds

	type write struct {
		endpoint, path string
		precision      string // the query parameter's value
		ts             int64  // the line's timestamp in that precision
		wantMs         int64
	}
	var writes []write
	for _, ep := range []struct{ name, path, micro string }{
		{"v1", "/write?db=telegraf", "u"}, // InfluxDB 1.x spells microseconds "u"
		{"v2", "/api/v2/write?org=e2e&bucket=telegraf", "us"},
	} {
		writes = append(writes,
			write{ep.name, ep.path, "ns", sec*1e9 + 123_456_789, sec*1000 + 123},
			write{ep.name, ep.path, ep.micro, (sec+1)*1e6 + 234_567, (sec+1)*1000 + 234},
			write{ep.name, ep.path, "ms", (sec+2)*1000 + 345, (sec+2)*1000 + 345},
			write{ep.name, ep.path, "s", sec + 3, (sec + 3) * 1000},
		)
	}
	for i, w := range writes {
		body := fmt.Sprintf("e2e_influx,endpoint=%s,precision=%s f=1.5,i=%di %d\n", w.endpoint, w.precision, 40+i, w.ts)
		code, msg, err := post(base, w.path+"&precision="+w.precision, []byte(body), map[string]string{"Content-Type": "text/plain; charset=utf-8"})
		if err != nil {
			t.Fatal(err)
		}
		if code/100 != 2 {
			t.Errorf("POST %s precision=%s: HTTP %d %s", w.path, w.precision, code, msg)
		} else if code != http.StatusNoContent {
			t.Logf("POST %s precision=%s: HTTP %d (InfluxDB answers 204)", w.path, w.precision, code)
		}
	}

	// A Telegraf-like batch: several measurements and tag sets, escapes,
	// integer and unsigned fields, a line without timestamp, gzip.
	before := time.Now().UnixMilli()
	batch := strings.Join([]string{
		fmt.Sprintf("e2e_cpu,cpu=cpu0,host=h1 usage_idle=97.5,usage_user=1.25 %d", sec+10),
		fmt.Sprintf("e2e_cpu,cpu=cpu1,host=h1 usage_idle=96,usage_user=2.5 %d", sec+10),
		fmt.Sprintf("e2e_mem,host=h1 used=123456789i,free=42u %d", sec+10),
		fmt.Sprintf(`e2e_weather,location=us\ west,path=a\,b temp=82 %d`, sec+10),
		"e2e_nots,host=h1 v=7",
	}, "\n") + "\n"
	for _, ep := range []string{"/write?db=telegraf&precision=s", "/api/v2/write?org=e2e&bucket=telegraf&precision=s"} {
		code, msg, err := post(base, ep, gzipBytes(t, []byte(batch)), map[string]string{"Content-Encoding": "gzip"})
		if err != nil {
			t.Fatal(err)
		}
		if code/100 != 2 {
			t.Errorf("POST %s (gzip): HTTP %d %s", ep, code, msg)
		}
	}
	after := time.Now().UnixMilli()

	// Malformed line between two good ones: 400 naming it, the good lines
	// stored (InfluxDB's "partial write").
	bad := "e2e_partial,case=bad"
	body := fmt.Sprintf("e2e_partial,case=good1 f=1 %d\n%s\ne2e_partial,case=good2 f=2 %d\n", sec+20, bad, sec+20)
	code, msg, err := post(base, "/write?db=telegraf&precision=s", []byte(body), nil)
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusBadRequest {
		t.Errorf("malformed line: HTTP %d %q, want 400", code, msg)
	} else if !strings.Contains(msg, bad) && !strings.Contains(msg, "line 2") {
		t.Errorf("malformed line: the 400's body %q names neither %q nor line 2", msg, bad)
	}
	code, msg, err = post(base, "/api/v2/write?org=e2e&bucket=telegraf&precision=s", []byte("e2e_partial,case=v2 f=3 "+fmt.Sprint(sec+20)+"\nnot line protocol at all\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusBadRequest {
		t.Errorf("malformed line on /api/v2/write: HTTP %d %q, want 400", code, msg)
	}

	for i, w := range writes {
		tags := fmt.Sprintf(`endpoint=%q,precision=%q`, w.endpoint, w.precision)
		expectSamples(t, base, "e2e_influx_f{"+tags+"}", []point{{w.wantMs, "1.5"}})
		expectSamples(t, base, "e2e_influx_i{"+tags+"}", []point{{w.wantMs, fmt.Sprint(40 + i)}})
	}
	ms := (sec + 10) * 1000
	expectSamples(t, base, `e2e_cpu_usage_idle{cpu="cpu0",host="h1"}`, []point{{ms, "97.5"}})
	expectSamples(t, base, `e2e_cpu_usage_user{cpu="cpu1",host="h1"}`, []point{{ms, "2.5"}})
	expectSamples(t, base, `e2e_mem_used{host="h1"}`, []point{{ms, "123456789"}})
	expectSamples(t, base, `e2e_mem_free{host="h1"}`, []point{{ms, "42"}})
	expectSamples(t, base, `e2e_weather_temp{location="us west",path="a,b"}`, []point{{ms, "82"}})
	now := time.Now().UnixMilli()
	got, err := rawSamples(base, `e2e_nots_v{host="h1"}`, now-3_600_000, now)
	if err != nil {
		t.Fatal(err)
	}
	for k, ps := range got {
		// Written twice (v1 and v2), each stamped with the server's clock.
		if len(ps) == 0 || len(ps) > 2 {
			t.Errorf("%s: %v, want 1 or 2 samples", k, ps)
		}
		for _, p := range ps {
			if p.T < before-1000 || p.T > after+1000 || p.V != "7" {
				t.Errorf("%s: line without timestamp stored as %v, want 7 at the time of the write (%s..%s)", k, p, fmtTime(before), fmtTime(after))
			}
		}
	}
	if len(got) != 1 {
		t.Errorf("e2e_nots_v: %d series, want 1", len(got))
	}
	expectSamples(t, base, `e2e_partial_f{case="good1"}`, []point{{(sec + 20) * 1000, "1"}})
	expectSamples(t, base, `e2e_partial_f{case="good2"}`, []point{{(sec + 20) * 1000, "2"}})
	expectSamples(t, base, `e2e_partial_f{case="v2"}`, []point{{(sec + 20) * 1000, "3"}})
}
