package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// execute runs the aerie command with args and returns its output.
func execute(args ...string) (string, error) {
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// TestBenchFlags: each form of aerie bench reaches its workload with its
// flags (the workload's configuration check answers before any server
// starts or data is made). The runs themselves are the workload
// packages' tests and scripts/test.sh's small-scale runs.
func TestBenchFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "cache", "--scale=huge", "--quiet"}, `--scale="huge"`},
		{[]string{"bench", "cache", "--clients=1000", "--quiet"}, "1000 clients"},
		{[]string{"bench", "cache", "--workloads=full,tiny", "--quiet"}, `workload "tiny"`},
		{[]string{"bench", "cache", "--cache-share=2", "--quiet"}, "cache share 2"},
		{[]string{"bench", "dashboard", "--scale=huge", "--quiet"}, `--scale="huge"`},
		{[]string{"bench", "dashboard", "--refreshes=-1", "--quiet"}, "--refreshes=-1"},
		{[]string{"bench", "graphite", "--scale=huge", "--quiet"}, `--scale="huge"`},
		{[]string{"bench", "graphite", "--duration=15s", "--quiet"}, "whole 10 s steps"},
		{[]string{"bench", "graphite", "--clients=100", "--quiet"}, "100 clients"},
		{[]string{"bench", "graphite", "--series=100", "--quiet"}, "at least 5000"},
		{[]string{"bench", "sensors", "--scale=huge", "--quiet"}, `--scale="huge"`},
		// Today's form, as scripts and docs use it.
		{[]string{"bench", "--workload=sensors", "--scale=huge", "--quiet"}, `--scale="huge"`},
		{[]string{"bench", "--workload=sensors", "--duration=90m", "--quiet"}, "--duration=1h30m0s: want whole hours"},
		{[]string{"bench", "--workload=sensors", "--writers=100", "--quiet", "--out=x.json"}, "100 upload clients"},
		{[]string{"bench", "--workload", "tsbs", "--scale=huge", "--quiet"}, `--scale="huge"`},
		{[]string{"bench", "--scale=huge", "--quiet"}, `--scale="huge"`}, // node
		{[]string{"bench", "--workload=nosuch"}, `--workload="nosuch": no such workload`},
		{[]string{"bench", "--workload=node", "--nosuchflag"}, "unknown flag: --nosuchflag"},
		{[]string{"bench", "nosuch"}, `"nosuch"`},
	} {
		if _, err := execute(tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

// TestBenchList names every workload the issue lists with what it
// compares.
func TestBenchList(t *testing.T) {
	out, err := execute("bench", "list")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"node", "random", "tsbs", "history", "http", "dashboard", "bucket", "sensors", "rollup", "graphite", "cache"} {
		if !strings.Contains(out, "\n"+w+" ") && !strings.HasPrefix(out, w+" ") {
			t.Errorf("bench list lacks %s:\n%s", w, out)
		}
	}
	if !strings.Contains(out, "VictoriaMetrics") || !strings.Contains(out, "prometheus/tsdb") {
		t.Errorf("bench list does not say what is compared:\n%s", out)
	}
}

// TestBenchReportFromResults: aerie bench report reads every committed
// report in bench/results (each workload's kind) and writes each one's
// section.
func TestBenchReportFromResults(t *testing.T) {
	files, err := filepath.Glob("../../bench/results/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no committed reports: %v", err)
	}
	out := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	if _, err := execute(append([]string{"bench", "report", "-o", out}, files...)...); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Goals", "## node (medium scale)", "## History", "vs VictoriaMetrics", "## Object storage", "## Sensor histories", "## Rollups", "## Graphite", "## Reproduce"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("BENCHMARKS.md lacks %q", want)
		}
	}
}
