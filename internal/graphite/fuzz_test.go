package graphite

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"
)

// FuzzRenderParams feeds arbitrary query strings through /render's
// parameter parsing: no panic, and every error names a parameter.
func FuzzRenderParams(f *testing.F) {
	for _, s := range []string{
		"target=a.b&format=json&from=-1h&until=now",
		"target=a;b=c&format=json&maxDataPoints=100&noNullPoints&jsonp=cb",
		"target[]=x&pickle=1&from=04:00_20240101&until=midnight&tz=Europe/Paris",
		"rawData&target=sumSeries(a.*)&xFilesFactor=0.5&now=1700000000",
		"format=csv&from=%zz", "&&&=&format=json&target=%3B", "format=json&from=now&until=now",
	} {
		f.Add(s)
	}
	a := New(&memStore{}, Options{Now: func() time.Time { return apiNow }, MaxTargets: 5, MaxTargetLen: 64})
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := parseQuery(raw)
		if err != nil {
			return
		}
		rr, err := a.ParseRenderRequest(q)
		if err != nil {
			var pe *paramError
			if !errors.As(err, &pe) || pe.param == "" {
				t.Fatalf("ParseRenderRequest(%q): %T %v, want a *paramError", raw, err, err)
			}
			return
		}
		if rr.From >= rr.Until || len(rr.Targets) > 5 || rr.Format == "" {
			t.Fatalf("ParseRenderRequest(%q) = %+v", raw, rr)
		}
	})
}

// FuzzParseTagged checks that a parsed tagged path formats to a path
// that parses back to the same tags.
func FuzzParseTagged(f *testing.F) {
	for _, s := range []string{"a.b;k=v", "a.b;z=1;a=2", `a.b{k="v",x="y\"z"}`, "~a;k==v", "a;=v", "a;k=~v", ";k=v", "a.b;k"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tags, err := ParseTagged(s)
		if err != nil {
			var pe *PatternError
			if !errors.As(err, &pe) {
				t.Fatalf("ParseTagged(%q): %T, want *PatternError", s, err)
			}
			return
		}
		p := FormatTagged(tags)
		if strings.HasSuffix(p, `"}`) && strings.Contains(p, "{") {
			return // reads as OpenMetrics
		}
		back, err := ParseTagged(p)
		if err != nil || !maps.Equal(tags, back) {
			t.Fatalf("ParseTagged(%q) = %v; formatted %q parses to %v, %v", s, tags, p, back, err)
		}
	})
}

// FuzzTagMatchers checks seriesByTag expressions never panic and that
// the matchers accept what graphite-web's anchored-at-start regex does.
func FuzzTagMatchers(f *testing.F) {
	for _, s := range []string{"name=a.b", "dc!=x", "host=~web.*", "x!=~^a$", "=v", "k", "k!v", "a=~(", "name=~"} {
		f.Add(s, "web1")
	}
	f.Fuzz(func(t *testing.T, e, value string) {
		ms, err := TagMatchers([]string{e})
		if err != nil {
			return
		}
		ts, err := ParseTagSpec(e)
		if err != nil {
			t.Fatalf("TagMatchers accepts %q but ParseTagSpec does not: %v", e, err)
		}
		if ts.Op == "=~" && strings.HasPrefix(value, ts.Value) && !strings.ContainsAny(ts.Value, `\.+*?()|[]{}^$`) && !ms[0].Matches(value) {
			t.Fatalf("%q does not match %q, which starts with its literal", e, value)
		}
	})
}
