package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
)

var (
	diffNames  = []string{"__name__", "a", "b", "c", "d"}
	diffValues = []string{"", "x", "y", "xy", "1", "10", "foo", "bar", "a.b", "X"}
	diffRegexp = []string{
		"", ".*", ".+", "x|y", "|x", "x.*", ".*y", "(foo|bar)", "1.*", "[xy]+", "(?i)x",
		"a\\.b", "a.b", "foo|", "f.o|1", "10|1|x|y", "xy?", "zzz", ".", "(?i)(foo|BAR)",
	}
)

func randomSeries(rng *rand.Rand, n int) []labels.Labels {
	seen := map[string]bool{}
	var out []labels.Labels
	for len(out) < n {
		b := labels.NewBuilder(labels.EmptyLabels())
		for _, name := range diffNames {
			if rng.IntN(3) > 0 {
				b.Set(name, diffValues[rng.IntN(len(diffValues))])
			}
		}
		ls := b.Labels()
		if ls.IsEmpty() || seen[ls.String()] {
			continue
		}
		seen[ls.String()] = true
		out = append(out, ls)
	}
	return out
}

func randomMatchers(rng *rand.Rand) []*labels.Matcher {
	names := append(slices.Clone(diffNames), "missing")
	ms := make([]*labels.Matcher, 1+rng.IntN(3))
	for i := range ms {
		typ := labels.MatchType(rng.IntN(4))
		var v string
		if typ == labels.MatchEqual || typ == labels.MatchNotEqual {
			v = diffValues[rng.IntN(len(diffValues))]
		} else {
			v = diffRegexp[rng.IntN(len(diffRegexp))]
		}
		ms[i] = labels.MustNewMatcher(typ, names[rng.IntN(len(names))], v)
	}
	return ms
}

// TestSelectMatchesPrometheus compares Select, LabelValues and LabelNames
// with a Prometheus TSDB holding the same random series.
func TestSelectMatchesPrometheus(t *testing.T) { eachFilter(t, testSelectMatchesPrometheus) }

func testSelectMatchesPrometheus(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	series := randomSeries(rng, 300)

	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	app := db.Appender(ctx)
	for _, ls := range series {
		if _, err := app.Append(0, ls, 1000, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := app.Commit(); err != nil {
		t.Fatal(err)
	}
	q, err := db.Querier(0, 2000)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()

	readers := buildReaders(t, series)
	const rounds = 2000
	partial := 0 // selections that are neither empty nor everything
	for i := 0; i < rounds; i++ {
		ms := randomMatchers(rng)
		desc := fmt.Sprint(ms)

		want := promSelect(t, q, ms)
		if len(want) > 0 && len(want) < len(series) {
			partial++
		}
		for _, nr := range readers {
			got, err := Select(nr.r, slices.Clone(ms)...)
			if err != nil {
				t.Fatalf("%s %s: %v", nr.name, desc, err)
			}
			if g := labelStrings(got, nr.labels); !slices.Equal(g, want) {
				t.Fatalf("%s %s:\n got %d %v\nwant %d %v", nr.name, desc, len(g), g, len(want), want)
			}
		}

		name := diffNames[rng.IntN(len(diffNames))]
		wantVals, _, err := q.LabelValues(ctx, name, nil, slices.Clone(ms)...)
		if err != nil {
			t.Fatal(err)
		}
		wantNames, _, err := q.LabelNames(ctx, nil, slices.Clone(ms)...)
		if err != nil {
			t.Fatal(err)
		}
		for _, nr := range readers {
			gotVals, err := LabelValues(nr.r, name, slices.Clone(ms)...)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(gotVals, wantVals) {
				t.Fatalf("%s LabelValues(%s, %s): got %q, want %q", nr.name, name, desc, gotVals, wantVals)
			}
			gotNames, err := LabelNames(nr.r, slices.Clone(ms)...)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(gotNames, wantNames) {
				t.Fatalf("%s LabelNames(%s): got %q, want %q", nr.name, desc, gotNames, wantNames)
			}
		}
	}
	if partial < rounds/4 {
		t.Fatalf("only %d of %d random selectors chose a proper subset; the test is too weak", partial, rounds)
	}
	t.Logf("%d of %d selectors chose a proper subset", partial, rounds)
}

func promSelect(t *testing.T, q storage.Querier, ms []*labels.Matcher) []string {
	t.Helper()
	ss := q.Select(context.Background(), false, nil, slices.Clone(ms)...)
	out := []string{}
	for ss.Next() {
		out = append(out, ss.At().Labels().String())
	}
	if err := ss.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}
