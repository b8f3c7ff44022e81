package harness

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

type testReport struct {
	Header
	Figure float64 `json:"figure"`
}

func TestReportJSON(t *testing.T) {
	r := testReport{Header: NewHeader("test", "small"), Figure: 1.5}
	r.Done()
	if r.Commit == "" || r.Machine == nil || r.Machine.Cores == 0 || r.Date == "" {
		t.Fatalf("header not filled: %+v", r.Header)
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, &r); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"kind": "test"`, `"machine"`, `"commit"`, `"scale": "small"`, `"seconds"`, `"figure": 1.5`} {
		if !strings.Contains(b.String(), key) {
			t.Errorf("JSON lacks %s:\n%s", key, b.String())
		}
	}
	var back testReport
	if err := ReadJSON("r.json", b.Bytes(), "test", &back); err != nil || back.Figure != 1.5 || back.Commit != r.Commit {
		t.Fatalf("ReadJSON: %+v %v", back, err)
	}
	if err := ReadJSON("r.json", b.Bytes(), "other", &back); err == nil || !strings.Contains(err.Error(), `kind "test", not "other"`) {
		t.Fatalf("wrong kind: %v", err)
	}
	if KindOf([]byte("not json")) != "" {
		t.Fatal("KindOf of garbage")
	}
}

func TestFormats(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Num(0), "0"}, {Num(123456), "123456"}, {Num(123.45), "123.5"}, {Num(1.23456), "1.235"}, {Num(0.012345), "0.0123"},
		{RatioOf(1, 0), "—"}, {RatioOf(3, 2), "1.500"},
		{Bytes(5), "5 B"}, {Bytes(20 << 10), "20 KiB"}, {Bytes(30 << 20), "30 MiB"},
		{MDEscape(" a|b\nc "), `a\|b c`},
		{AtLeast("x", 2, 1.5).Mark(), "met"}, {AtMost("x", 2, 1.5).Mark(), "behind"}, {AtMost("x", 0, 1.5).Mark(), "behind"},
		{Ratio{}.Mark(), ""}, {AtLeast("x", 2, 1.5).Goal, "≥ 1.5×"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	ds := []time.Duration{5, 1, 4, 2, 3}
	if Percentile(ds, 0.5) != 3 || Percentile(ds, 1) != 5 || Percentile(nil, 0.5) != 0 || ds[0] != 5 {
		t.Fatal("Percentile")
	}
}
