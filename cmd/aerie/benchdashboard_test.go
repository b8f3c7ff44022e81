package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestBenchDashboardFlags: aerie bench dashboard reaches bench/httpbench
// with its flags (its configuration check answers before any server
// starts). The replay itself is what scripts/test.sh runs at small scale.
func TestBenchDashboardFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "dashboard", "--scale=huge", "--quiet"}, `--scale="huge"`},
		{[]string{"bench", "dashboard", "--refreshes=-1", "--quiet"}, "--refreshes=-1"},
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
