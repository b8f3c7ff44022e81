package harness

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRunPhases(t *testing.T) {
	var log bytes.Buffer
	var ran []string
	boom := errors.New("boom")
	err := RunPhases(&log,
		Phase{"one", func() error { ran = append(ran, "one"); return nil }},
		Phase{"two", func() error { ran = append(ran, "two"); return boom }},
		Phase{"three", func() error { ran = append(ran, "three"); return nil }},
	)
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "two: ") || strings.Join(ran, ",") != "one,two" {
		t.Fatalf("err %v, ran %v", err, ran)
	}
	if !strings.Contains(log.String(), "== one") || strings.Contains(log.String(), "three") {
		t.Fatalf("log %q", log.String())
	}
}

func TestUnderQueries(t *testing.T) {
	lat, took, err := UnderQueries(func() error { return nil }, func() error { return nil })
	if err != nil || len(lat) < 1 || took < 0 {
		t.Fatalf("a fast fn: %d queries, %v, %v", len(lat), took, err)
	}
	lat, took, err = UnderQueries(func() error { time.Sleep(20 * time.Millisecond); return nil }, func() error { time.Sleep(time.Millisecond); return nil })
	if err != nil || len(lat) < 2 || took < 20*time.Millisecond {
		t.Fatalf("a slow fn: %d queries, %v, %v", len(lat), took, err)
	}
	qerr, ferr := errors.New("query"), errors.New("fn")
	if _, _, err := UnderQueries(func() error { time.Sleep(5 * time.Millisecond); return nil }, func() error { return qerr }); err != qerr {
		t.Fatalf("a failing query: %v", err)
	}
	if _, _, err := UnderQueries(func() error { return ferr }, func() error { return qerr }); err != ferr {
		t.Fatalf("a failing fn comes first: %v", err)
	}
}
