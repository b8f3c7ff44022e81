package index

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
)

func TestMemIndexChurn(t *testing.T) {
	m := NewMemIndex()
	m.Add(1, labels.FromStrings("job", "a", "x", "1"))
	m.Add(2, labels.FromStrings("job", "a", "x", "2", "e", ""))
	m.Add(3, labels.FromStrings("job", "b"))

	if ls, ok := m.Labels(2); !ok || ls.Has("e") {
		t.Fatalf("Labels(2) = %s, %v; empty values must be dropped", ls, ok)
	}
	m.Delete(2)
	m.Delete(2)  // no-op
	m.Delete(99) // no-op
	if _, ok := m.Labels(2); ok || m.NumSeries() != 2 {
		t.Fatal("Delete left the series")
	}
	if got := m.LabelValues("x", nil); !slices.Equal(got, []string{"1"}) {
		t.Fatalf("values of x after delete: %q", got)
	}
	m.Delete(3)
	if got := m.LabelValues("job", nil); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("values of job: %q", got)
	}
	// Re-adding a ref with other labels replaces them.
	m.Add(1, labels.FromStrings("job", "c"))
	if got := m.LabelNames(nil); !slices.Equal(got, []string{"job"}) {
		t.Fatalf("names after replace: %q", got)
	}
	p, err := Select(m, labels.MustNewMatcher(labels.MatchEqual, "job", "c"))
	if err != nil || !slices.Equal(p.ToArray(), []uint32{1}) {
		t.Fatalf("select after replace: %v %v", p, err)
	}
	m.Delete(1)
	if len(m.postings) != 0 || !m.all.IsEmpty() || len(m.series) != 0 {
		t.Fatal("empty index keeps postings")
	}
}

func TestMemIndexConcurrent(t *testing.T) {
	m := NewMemIndex()
	jobs := []string{"a", "b", "c"}
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				ref := uint32(w*30000 + i) // ref%3 == i%3
				m.Add(ref, labels.FromStrings("job", jobs[i%3], "w", string(rune('0'+w))))
				if i%3 == 0 {
					m.Delete(ref)
				}
			}
		}()
	}
	ms := []*labels.Matcher{
		labels.MustNewMatcher(labels.MatchRegexp, "job", "a|b"),
		labels.MustNewMatcher(labels.MatchNotEqual, "w", "1"),
	}
	for i := 0; i < 200; i++ {
		p, err := Select(m, ms...)
		if err != nil {
			t.Fatal(err)
		}
		// Every selected ref is a job a|b series (i%3 is 0 or 1) of worker 0,
		// or one of worker 1 that was deleted during Select (see Select).
		it := p.Iterator()
		for it.HasNext() {
			ref := it.Next()
			_, live := m.Labels(ref)
			if ref%3 == 2 || ref >= 30000 && (ref%3 != 0 || live) {
				t.Fatalf("selected ref %d", ref)
			}
		}
		LabelValues(m, "job", ms...)
		LabelNames(m, ms...)
	}
	wg.Wait()
	if n := m.NumSeries(); n != 2*(2000-667) {
		t.Fatalf("NumSeries = %d", n)
	}
}

// TestEqualRefs: for equality matchers with values, EqualRefs gives
// Select's result; for any other matcher it declines.
func TestEqualRefs(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	series := randomSeries(rng, 400)
	mem := NewMemIndex()
	for i, ls := range series {
		mem.Add(uint32(5*i+1), ls)
	}
	hits := 0
	for range 3000 {
		ms := make([]*labels.Matcher, 1+rng.IntN(4))
		for i := range ms {
			v := diffValues[rng.IntN(len(diffValues))]
			ms[i] = labels.MustNewMatcher(labels.MatchEqual, diffNames[rng.IntN(len(diffNames))], v)
		}
		if rng.IntN(10) == 0 {
			ms[0] = labels.MustNewMatcher(labels.MatchRegexp, ms[0].Name, "x.*")
		}
		want, err := Select(mem, slices.Clone(ms)...)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := mem.EqualRefs(nil, ms)
		allEqual := true
		for _, m := range ms {
			allEqual = allEqual && m.Type == labels.MatchEqual && m.Value != ""
		}
		if ok != allEqual {
			t.Fatalf("%v: ok %v", ms, ok)
		}
		if !ok {
			continue
		}
		if w := want.ToArray(); !slices.Equal(got, w) && !(len(got) == 0 && len(w) == 0) {
			t.Fatalf("%v: got %v, want %v", ms, got, w)
		}
		if len(got) > 0 {
			hits++
		}
	}
	if hits < 100 {
		t.Errorf("only %d non-empty selections", hits)
	}
}
