package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchCacheFlags: aerie bench cache reaches bench/cachebench with
// its flags (its configuration check answers before any server starts).
// The run itself is bench/cachebench's TestRun.
func TestBenchCacheFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "cache", "--scale=huge", "--quiet"}, `--scale="huge"`},
		{[]string{"bench", "cache", "--clients=1000", "--quiet"}, "1000 clients"},
		{[]string{"bench", "cache", "--workloads=full,tiny", "--quiet"}, `workload "tiny"`},
		{[]string{"bench", "cache", "--cache-share=2", "--quiet"}, "cache share 2"},
	} {
		cmd := newRootCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(tc.args)
		err := cmd.Execute()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}
