// Package harnesstest holds what the workloads' tests share: a progress
// log through t.Log, this repository's aerie built for a test, and the
// check that a report reads back through its workload to the same JSON
// and renders.
package harnesstest

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aerie-db/aerie/bench/harness"
)

// Log is a progress writer that logs each line through t.Log.
func Log(t testing.TB) *Writer { return &Writer{t} }

// Writer logs what is written to it through t.Log.
type Writer struct{ t testing.TB }

func (w *Writer) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// BuildAerie builds cmd/aerie into the test's temporary directory and
// returns its path.
func BuildAerie(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "aerie")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/aerie-db/aerie/cmd/aerie").CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./cmd/aerie: %v\n%s", err, out)
	}
	return bin
}

// RoundTrip checks that rep's JSON reads back through w (the registry's
// reader) and writes the same JSON again, and returns the read-back
// report's Markdown section.
func RoundTrip(t testing.TB, w *harness.Workload, rep harness.Report) string {
	t.Helper()
	var buf, again bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := w.Read(w.Name+".json", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := back.WriteJSON(&again); err != nil {
		t.Fatal(err)
	}
	if buf.String() != again.String() {
		t.Fatalf("%s report read back writes other JSON:\n%s\nwant\n%s", w.Name, again.String(), buf.String())
	}
	var md strings.Builder
	if err := back.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Read("other.json", []byte(`{"kind":"other-kind"}`)); err == nil {
		t.Fatalf("%s reads a report of another kind", w.Name)
	}
	return md.String()
}
