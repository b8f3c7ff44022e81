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

// TestTagSetKey: a tag-set group keeps its tags instead of its key; the
// key parses back to them, and only their key matches them.
func TestTagSetKey(t *testing.T) {
	for _, lset := range []labels.Labels{
		labels.FromStrings("__name__", "cpu", "host", "h1", "region", "eu"),
		labels.FromStrings("Zone", "z", "__name__", "cpu", "host", "h1"),
		labels.FromStrings("a", `x,y=z\"q`, "b", `\`, "c", ","),
		labels.FromStrings("a", "1"),
	} {
		key := GroupKey(lset, nil, 0)
		tags, ok := parseTagSetKey(key)
		if !ok || !labels.Equal(tags, lset.DropMetricName()) {
			t.Fatalf("parseTagSetKey(%q) = %s, %v; want %s", key, tags, ok, lset.DropMetricName())
		}
		if !isTagSetKey(key, tags) || !isTagSetKey(key, lset) {
			t.Errorf("isTagSetKey(%q, %s) = false", key, tags)
		}
		g := newGroup(1, key)
		if g.key != "" || g.tags == nil || !g.tagSet() || g.Key() != key || !g.hasKey(key) {
			t.Errorf("group of %q: key %q, tags %v, Key() %q", key, g.key, g.tags, g.Key())
		}
		for _, other := range []string{key[:len(key)-1], key + "x=1,", "g:" + key[2:], "t:", ""} {
			if g.hasKey(other) {
				t.Errorf("group of %q has key %q", key, other)
			}
		}
	}
	for _, key := range []string{"t:", "t:a", "t:a=1", "t:=1,", "t:b=1,a=2,", "t:a=1,a=1,", `t:a=1\`, "t:__name__=x,", "g:job=a,", "s:{}"} {
		if tags, ok := parseTagSetKey(key); ok && key != "t:" {
			t.Errorf("parseTagSetKey(%q) = %s, want not a tag-set key", key, tags)
		}
		g := newGroup(1, key)
		if g.Key() != key || !g.hasKey(key) {
			t.Errorf("group of %q: Key() %q", key, g.Key())
		}
	}
}

// FuzzTagSetKey: parseTagSetKey never panics, and what it accepts is
// exactly a key tagSetKey writes.
func FuzzTagSetKey(f *testing.F) {
	f.Add("t:host=h1,region=eu,")
	f.Add(`t:a=x\,y\\\",`)
	f.Add("t:b=1,a=2,")
	f.Fuzz(func(t *testing.T, key string) {
		tags, ok := parseTagSetKey(key)
		if !ok {
			return
		}
		if got := tagSetKey(tags); got != key {
			t.Fatalf("parseTagSetKey(%q) = %s, whose key is %q", key, tags, got)
		}
		if !isTagSetKey(key, tags) {
			t.Fatalf("isTagSetKey(%q, %s) = false", key, tags)
		}
	})
}
