package seriesiter

import (
	"math/rand"
	"sort"
	"testing"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// sliceSource stores rows in tuples of size n; present[i] says whether row
// i has a value.
type sliceSource struct {
	n       int
	ts      []int64
	vs      []float64
	present []bool
}

func (s *sliceSource) NumTuples() int    { return (len(s.ts) + s.n - 1) / s.n }
func (s *sliceSource) First(k int) int64 { return s.ts[k*s.n] }
func (s *sliceSource) Load(k int, ts []int64, vs []float64) (int, uint32, error) {
	lo, hi := k*s.n, min((k+1)*s.n, len(s.ts))
	var p uint32
	for i := lo; i < hi; i++ {
		ts[i-lo], vs[i-lo] = s.ts[i], s.vs[i]
		if s.present[i] {
			p |= 1 << (i - lo)
		}
	}
	return hi - lo, p, nil
}

func TestIteratorAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for iter := 0; iter < 300; iter++ {
		src := &sliceSource{n: 1 + rng.Intn(8)}
		var model []Sample
		tt := int64(rng.Intn(100))
		rows := rng.Intn(60)
		used := map[int64]bool{}
		for i := 0; i < rows; i++ {
			tt += 1 + int64(rng.Intn(20))
			p := rng.Intn(4) != 0
			src.ts = append(src.ts, tt)
			src.vs = append(src.vs, float64(i))
			src.present = append(src.present, p)
			used[tt] = true
			if p {
				model = append(model, Sample{tt, float64(i)})
			}
		}
		var extra []Sample
		for i := 0; i < rng.Intn(10); i++ {
			et := int64(rng.Intn(int(tt) + 50))
			if used[et] {
				continue
			}
			used[et] = true
			extra = append(extra, Sample{et, -float64(i) - 1})
		}
		sort.Slice(extra, func(i, j int) bool { return extra[i].T < extra[j].T })
		model = append(model, extra...)
		sort.Slice(model, func(i, j int) bool { return model[i].T < model[j].T })
		mint, maxt := int64(rng.Intn(int(tt)+10))-5, int64(rng.Intn(int(tt)+50))
		var want []Sample
		for _, s := range model {
			if s.T >= mint && s.T <= maxt {
				want = append(want, s)
			}
		}
		// Full iteration.
		it := NewIterator(nil, src, extra, mint, maxt)
		var got []Sample
		for it.Next() == chunkenc.ValFloat {
			a, b := it.At()
			got = append(got, Sample{a, b})
		}
		if len(got) != len(want) {
			t.Fatalf("case %d: got %v want %v", iter, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("case %d: at %d got %v want %v", iter, i, got[i], want[i])
			}
		}
		// AppendSamples in batches of random size, interleaved with Next.
		it = NewIterator(it, src, extra, mint, maxt)
		got = got[:0]
		for more := true; more; {
			if rng.Intn(3) == 0 {
				if it.Next() != chunkenc.ValFloat {
					break
				}
				a, b := it.At()
				got = append(got, Sample{a, b})
				continue
			}
			var ts []int64
			var vs []float64
			ts, vs, more = it.AppendSamples(ts, vs, 1+rng.Intn(12))
			for i := range ts {
				got = append(got, Sample{ts[i], vs[i]})
			}
		}
		if len(got) != len(want) {
			t.Fatalf("case %d: AppendSamples got %v want %v", iter, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("case %d: AppendSamples at %d got %v want %v", iter, i, got[i], want[i])
			}
		}
		if it.Next() != chunkenc.ValNone {
			t.Fatalf("case %d: Next after the last AppendSamples", iter)
		}
		// Random seeks interleaved with Next.
		it = NewIterator(it, src, extra, mint, maxt)
		cur := int64(-1 << 62)
		pos := -1 // index in want of the current sample
		for step := 0; step < 20; step++ {
			if rng.Intn(2) == 0 {
				target := int64(rng.Intn(int(tt) + 60))
				vt := it.Seek(target)
				if target < cur {
					target = cur
				}
				j := sort.Search(len(want), func(i int) bool { return want[i].T >= target })
				if pos >= 0 && j < pos {
					j = pos
				}
				if j >= len(want) {
					if vt != chunkenc.ValNone {
						t.Fatalf("case %d: seek %d past end returned a sample", iter, target)
					}
					break
				}
				if a, _ := it.At(); vt != chunkenc.ValFloat || a != want[j].T {
					t.Fatalf("case %d: seek %d got %d want %d", iter, target, a, want[j].T)
				}
				pos, cur = j, want[j].T
			} else {
				vt := it.Next()
				pos++
				if pos >= len(want) {
					if vt != chunkenc.ValNone {
						t.Fatalf("case %d: next past end", iter)
					}
					break
				}
				if a, _ := it.At(); vt != chunkenc.ValFloat || a != want[pos].T {
					t.Fatalf("case %d: next got %d want %d", iter, a, want[pos].T)
				}
				cur = want[pos].T
			}
		}
	}
}

func TestMerge(t *testing.T) {
	a := &sliceSource{n: 2, ts: []int64{1, 3, 5}, vs: []float64{1, 3, 5}, present: []bool{true, true, true}}
	b := &sliceSource{n: 2, ts: []int64{2, 3, 6}, vs: []float64{20, 30, 60}, present: []bool{true, true, true}}
	it := Merge(NewIterator(nil, a, nil, 0, 100), NewIterator(nil, b, nil, 0, 100))
	var got []Sample
	for it.Next() == chunkenc.ValFloat {
		x, y := it.At()
		got = append(got, Sample{x, y})
	}
	want := []Sample{{1, 1}, {2, 20}, {3, 3}, {5, 5}, {6, 60}}
	if len(got) != len(want) {
		t.Fatalf("got %v want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("got %v want %v", got, want)
		}
	}
	it = Merge(NewIterator(nil, a, nil, 0, 100), NewIterator(nil, b, nil, 0, 100))
	if it.Seek(4) != chunkenc.ValFloat || it.AtT() != 5 {
		t.Fatalf("seek 4: at %d", it.AtT())
	}
	if it.Next() != chunkenc.ValFloat || it.AtT() != 6 || it.Next() != chunkenc.ValNone {
		t.Fatal("after seek")
	}
}

// TestMergeAgainstModel merges random sources, overlapping or disjoint in
// time, with Next and Seek mixed, against a map: the earliest source wins
// a timestamp.
func TestMergeAgainstModel(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for round := 0; round < 3000; round++ {
		k := 1 + r.Intn(5)
		model := map[int64]float64{}
		var its []chunkenc.Iterator
		base := int64(0)
		for i := 0; i < k; i++ {
			if r.Intn(2) == 0 {
				base += int64(r.Intn(50)) // often disjoint, sometimes overlapping
			} else {
				base = int64(r.Intn(100))
			}
			s := &sliceSource{n: 1 + r.Intn(8)}
			maxt := int64(1000)
			if r.Intn(4) == 0 {
				maxt = base + int64(r.Intn(60))
			}
			t0 := base
			for j := r.Intn(30); j > 0; j-- {
				t0 += 1 + int64(r.Intn(3))
				p := r.Intn(5) != 0 // rows where the series has no value
				s.ts = append(s.ts, t0)
				s.vs = append(s.vs, float64(i*1000)+float64(t0))
				s.present = append(s.present, p)
				if _, ok := model[t0]; !ok && p && t0 <= maxt {
					model[t0] = float64(i*1000) + float64(t0)
				}
			}
			base = t0
			its = append(its, NewIterator(nil, s, nil, 0, maxt))
		}
		var want []Sample
		for t0, v := range model {
			want = append(want, Sample{t0, v})
		}
		sort.Slice(want, func(i, j int) bool { return want[i].T < want[j].T })
		it := Merge(its...)
		bulk := it.(interface {
			AppendSamples([]int64, []float64, int) ([]int64, []float64, bool)
		})
		i := 0
		for {
			var vt chunkenc.ValueType
			if r.Intn(3) == 0 { // a batch, then on as before
				ts, vs, more := bulk.AppendSamples(nil, nil, 1+r.Intn(20))
				for j := range ts {
					if i >= len(want) || ts[j] != want[i].T || vs[j] != want[i].V {
						t.Fatalf("round %d: AppendSamples sample %d = (%d, %v), want %v", round, i, ts[j], vs[j], want[min(i, len(want)-1)])
					}
					i++
				}
				if !more {
					if it.Next() != chunkenc.ValNone {
						t.Fatalf("round %d: Next after AppendSamples said no more", round)
					}
					break
				}
				continue
			}
			if r.Intn(4) == 0 && i < len(want) {
				skip := r.Intn(3)
				if i+skip >= len(want) {
					skip = 0
				}
				vt = it.Seek(want[i+skip].T)
				i += skip
			} else {
				vt = it.Next()
			}
			if vt == chunkenc.ValNone {
				break
			}
			if i >= len(want) {
				t.Fatalf("round %d: extra sample at %d", round, it.AtT())
			}
			if x, y := it.At(); x != want[i].T || y != want[i].V {
				t.Fatalf("round %d: sample %d = (%d, %v), want %v", round, i, x, y, want[i])
			}
			i++
		}
		if i != len(want) {
			t.Fatalf("round %d: %d samples, want %d", round, i, len(want))
		}
	}
}
