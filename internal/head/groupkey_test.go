package head

import (
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

func TestGroupKey(t *testing.T) {
	def := []string{"job", "instance"}
	for _, tc := range []struct {
		name  string
		lset  labels.Labels
		by    []string
		depth int
		want  string
	}{
		{"job and instance", labels.FromStrings("__name__", "up", "job", "node", "instance", "a:9100"), def, 2, `g:job=node,instance=a:9100,`},
		{"other labels ignored", labels.FromStrings("__name__", "x", "job", "node", "instance", "a:9100", "cpu", "0"), def, 2, `g:job=node,instance=a:9100,`},
		{"job only", labels.FromStrings("__name__", "x", "job", "node"), def, 2, `g:job=node,instance=,`},
		{"separators escaped", labels.FromStrings("job", `a,instance=b`), def, 2, `g:job=a\,instance=b,instance=,`},
		{"influx tag set", labels.FromStrings("__name__", "cpu_usage_user", "host", "h1", "region", "eu"), def, 2, `t:host=h1,region=eu,`},
		{"custom group_by", labels.FromStrings("__name__", "x", "host", "h1", "dc", "eu"), []string{"dc"}, 2, `g:dc=eu,`},
		{"graphite prefix", labels.FromStrings("__name__", "servers.web1.cpu.user"), def, 2, `p:servers.web1`},
		{"graphite depth 1", labels.FromStrings("__name__", "servers.web1.cpu.user"), def, 1, `p:servers`},
		{"graphite too short", labels.FromStrings("__name__", "servers.web1"), def, 2, `s:{__name__="servers.web1"}`},
		{"graphite off", labels.FromStrings("__name__", "a.b.c"), def, 0, `s:{__name__="a.b.c"}`},
		{"singleton", labels.FromStrings("__name__", "up"), def, 2, `s:{__name__="up"}`},
		{"no group_by configured", labels.FromStrings("__name__", "x", "job", "j"), nil, 2, `t:job=j,`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := GroupKey(tc.lset, tc.by, tc.depth); got != tc.want {
				t.Fatalf("GroupKey(%s) = %q, want %q", tc.lset, got, tc.want)
			}
		})
	}
}

func TestMovedKeyDiffers(t *testing.T) {
	l := labels.FromStrings("__name__", "up")
	if MovedKey(l) == GroupKey(l, nil, 0) {
		t.Fatal("moved key must not collide with the singleton key")
	}
}
