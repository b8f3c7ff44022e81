package index

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

var fixedSeries = []labels.Labels{
	0: labels.FromStrings("__name__", "up", "instance", "a", "job", "api"),
	1: labels.FromStrings("__name__", "up", "instance", "b", "job", "api"),
	2: labels.FromStrings("__name__", "up", "instance", "a", "job", "db"),
	3: labels.FromStrings("__name__", "cpu", "instance", "a", "job", "api", "mode", "idle"),
	4: labels.FromStrings("__name__", "cpu", "instance", "a", "job", "api", "mode", "user"),
	5: labels.FromStrings("__name__", "cpu", "job", "db", "mode", "idle"),
	6: labels.FromStrings("__name__", "mem", "env", "", "job", "db"), // env="" is no env
	7: labels.FromStrings("__name__", "mem"),
	8: labels.FromStrings("foo", "bar"),
}

// parseMatchers reads a selector such as `{job!="a", x=~"b|c"}`; "{}" gives
// no matchers.
func parseMatchers(t *testing.T, sel string) []*labels.Matcher {
	t.Helper()
	if sel == "{}" {
		return nil
	}
	ms, err := parser.ParseMetricSelector(sel)
	if err != nil {
		t.Fatalf("parse %s: %v", sel, err)
	}
	return ms
}

// eachFilter runs f with Select reading every matcher's postings, with
// its default, and testing every candidate after the first matcher one
// by one (filterBelow).
func eachFilter(t *testing.T, f func(t *testing.T)) {
	defer func(v uint64) { filterBelow = v }(filterBelow)
	for _, fb := range []uint64{0, filterBelow, math.MaxUint64} {
		filterBelow = fb
		t.Run(fmt.Sprintf("filterBelow=%d", fb), f)
	}
}

func TestSelect(t *testing.T) { eachFilter(t, testSelect) }

func testSelect(t *testing.T) {
	all := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}
	cases := []struct {
		sel  string
		want []int // positions in fixedSeries
	}{
		{`{__name__="up"}`, []int{0, 1, 2}},
		{`{__name__="nope"}`, nil},
		{`{job!="api"}`, []int{2, 5, 6, 7, 8}},
		{`{job=""}`, []int{7, 8}},
		{`{job!=""}`, []int{0, 1, 2, 3, 4, 5, 6}},
		{`{env=""}`, all},
		{`{env!=""}`, nil},
		{`{mode=~"idle|user"}`, []int{3, 4, 5}},
		{`{mode=~"|idle"}`, []int{0, 1, 2, 3, 5, 6, 7, 8}},
		{`{mode=~""}`, []int{0, 1, 2, 6, 7, 8}},
		{`{mode!~"idle"}`, []int{0, 1, 2, 4, 6, 7, 8}},
		{`{mode!~"idle|user"}`, []int{0, 1, 2, 6, 7, 8}},
		{`{mode!~"|idle"}`, []int{4}},
		{`{mode=~".*"}`, all},
		{`{mode=~".+"}`, []int{3, 4, 5}},
		{`{mode!~".+"}`, []int{0, 1, 2, 6, 7, 8}},
		{`{mode!~".*"}`, nil},
		{`{instance=~"a|b", job="api"}`, []int{0, 1, 3, 4}},
		{`{__name__=~"c.*|m.*"}`, []int{3, 4, 5, 6, 7}},
		{`{__name__=~"(?i)UP"}`, []int{0, 1, 2}},
		{`{__name__=~"u."}`, []int{0, 1, 2}},
		{`{job=~".+", job!="api"}`, []int{2, 5, 6}},
		{`{job!="api", job!="db"}`, []int{7, 8}},
		{`{job=~"a.*", job=~".*i"}`, []int{0, 1, 3, 4}},
		{`{job="api", job="db"}`, nil},
		{`{__name__!="up", mode!="idle"}`, []int{4, 6, 7, 8}},
		{`{mode!="", mode!="idle"}`, []int{4}},
		{`{instance="a", mode=""}`, []int{0, 2}},
		{`{foo=~"b.r"}`, []int{8}},
		{`{nothere=~"x|y"}`, nil},
		{`{nothere!~"x|y"}`, all},
		{`{__name__="up", nothere=""}`, []int{0, 1, 2}},
		{`{__name__="up", instance!~"a", job=~"api|db"}`, []int{1}},
		{`{}`, nil},
	}
	readers := buildReaders(t, fixedSeries)
	for _, tc := range cases {
		ms := parseMatchers(t, tc.sel)
		want := []string{}
		for _, i := range tc.want {
			want = append(want, canonicalLabels(fixedSeries[i]).String())
		}
		slices.Sort(want)
		for _, nr := range readers {
			got, err := Select(nr.r, ms...)
			if err != nil {
				t.Fatalf("%s %s: %v", nr.name, tc.sel, err)
			}
			if g := labelStrings(got, nr.labels); !slices.Equal(g, want) {
				t.Errorf("%s %s:\n got %v\nwant %v", nr.name, tc.sel, g, want)
			}
		}
	}
}

func TestSelectEmptyNameMatcher(t *testing.T) {
	for _, nr := range buildReaders(t, fixedSeries) {
		got, err := Select(nr.r, labels.MustNewMatcher(labels.MatchEqual, "", ""))
		if err != nil || got.GetCardinality() != uint64(len(fixedSeries)) {
			t.Errorf("%s: {\"\"=\"\"} gave %v, %v; want all series", nr.name, got, err)
		}
		_, err = Select(nr.r, labels.MustNewMatcher(labels.MatchEqual, "job", "api"), labels.MustNewMatcher(labels.MatchEqual, "", ""))
		if err == nil {
			t.Errorf("%s: empty-name matcher beside another should fail, as in Prometheus", nr.name)
		}
	}
}

func TestLabelValuesAndNames(t *testing.T) {
	cases := []struct {
		name string // "" means LabelNames
		sel  string
		want []string
	}{
		{"job", `{}`, []string{"api", "db"}},
		{"job", `{__name__="mem"}`, []string{"db"}},
		{"mode", `{mode!="idle"}`, []string{"user"}},
		{"mode", `{mode=""}`, nil},
		{"instance", `{job="db"}`, []string{"a"}},
		{"instance", `{job="db", instance=~"b|c"}`, nil},
		{"env", `{}`, nil},
		{"", `{}`, []string{"__name__", "foo", "instance", "job", "mode"}},
		{"", `{__name__="up"}`, []string{"__name__", "instance", "job"}},
		{"", `{job="db"}`, []string{"__name__", "instance", "job", "mode"}},
		{"", `{job="nope"}`, nil},
	}
	for _, nr := range buildReaders(t, fixedSeries) {
		for _, tc := range cases {
			ms := parseMatchers(t, tc.sel)
			var got []string
			var err error
			if tc.name == "" {
				got, err = LabelNames(nr.r, ms...)
			} else {
				got, err = LabelValues(nr.r, tc.name, ms...)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s %q %s: got %q, want %q", nr.name, tc.name, tc.sel, got, tc.want)
			}
		}
	}
}
