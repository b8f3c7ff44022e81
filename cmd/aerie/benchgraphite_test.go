package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchGraphiteFlags: aerie bench graphite reaches bench/graphitebench
// with its flags (its configuration check answers before any server
// starts). The run itself is bench/graphitebench's TestRun.
func TestBenchGraphiteFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "graphite", "--scale=huge", "--quiet"}, `--scale="huge"`},
		{[]string{"bench", "graphite", "--duration=15s", "--quiet"}, "whole 10 s steps"},
		{[]string{"bench", "graphite", "--clients=100", "--quiet"}, "100 clients"},
		{[]string{"bench", "graphite", "--series=100", "--quiet"}, "at least 5000"},
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
