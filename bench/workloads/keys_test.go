package workloads

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aerie-db/aerie/bench/harness"
)

var update = flag.Bool("update", false, "rewrite testdata/keys.txt from bench/results")

// keyPaths returns the key paths of a JSON document: "a.b", "a[].c"
// (every element of an array merged).
func keyPaths(v any, prefix string, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			out[p] = true
			keyPaths(e, p, out)
		}
	case []any:
		for _, e := range x {
			keyPaths(e, prefix+"[]", out)
		}
	}
}

func pathsOf(t *testing.T, b []byte) map[string]bool {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	keyPaths(v, "", out)
	return out
}

// TestReportKeys lists, in testdata/keys.txt, the JSON keys each
// workload's committed report in bench/results has, and fails if one
// disappears: from a regenerated report (make benchmarks), or from the
// report's Go type (a committed report read through its workload and
// written again must keep every key).
func TestReportKeys(t *testing.T) {
	files, err := filepath.Glob("../results/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no reports in bench/results: %v", err)
	}
	want := map[string][]string{} // file base name → key paths
	if !*update {
		b, err := os.ReadFile("testdata/keys.txt")
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
			f, k, ok := strings.Cut(line, " ")
			if !ok {
				t.Fatalf("testdata/keys.txt: line %q", line)
			}
			want[f] = append(want[f], k)
		}
	}
	var golden bytes.Buffer
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		base := filepath.Base(path)
		have := pathsOf(t, b)
		w, rep, err := harness.ReadReport(path, b)
		if err != nil {
			t.Errorf("%s: %v", base, err)
			continue
		}
		var again bytes.Buffer
		if err := rep.WriteJSON(&again); err != nil {
			t.Fatal(err)
		}
		back := pathsOf(t, again.Bytes())
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range have {
				if !yield(k) {
					return
				}
			}
		})
		for _, k := range keys {
			fmt.Fprintf(&golden, "%s %s\n", base, k)
			if !back[k] {
				t.Errorf("%s: key %s is lost when read and written again by workload %s", base, k, w.Name)
			}
		}
		for _, k := range want[base] {
			if !have[k] {
				t.Errorf("%s: key %s of testdata/keys.txt is gone", base, k)
			}
		}
	}
	for base := range want {
		if _, err := os.Stat(filepath.Join("../results", base)); err != nil {
			t.Errorf("%s of testdata/keys.txt: %v", base, err)
		}
	}
	if *update {
		if err := os.WriteFile("testdata/keys.txt", golden.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
