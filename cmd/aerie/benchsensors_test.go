package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchSensorsDispatch: --workload=sensors reaches bench/sensorbench
// with the bench command's flags (its scale check answers, before any
// server starts). The run itself is bench/sensorbench's TestRun.
func TestBenchSensorsDispatch(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--workload=sensors", "--scale=huge", "--quiet"}, `--scale="huge"`},
		{[]string{"bench", "--workload=sensors", "--duration=90m", "--quiet"}, "--duration=1h30m0s: want whole hours"},
		{[]string{"bench", "--workload=sensors", "--writers=100", "--quiet", "--out=x.json"}, "100 upload clients"},
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
