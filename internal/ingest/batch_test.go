package ingest

import "testing"

// TestSeenSet: keys whose words collide are told apart, before and after
// a reset.
func TestSeenSet(t *testing.T) {
	a := sampleKey{hash: 0x1234_5678_9abc_def0, t: 1000}
	b := sampleKey{t: 2000}
	b.hash = a.word() ^ uint64(b.t)*0x9e3779b97f4a7c15 // b.word() == a.word()
	if a.word() != b.word() {
		t.Fatal("the test's keys do not collide")
	}
	c := sampleKey{hash: a.hash, t: 3000}
	s := &seenSet{m: map[uint64]seenEntry{}}
	for round := 0; round < 2; round++ {
		for _, k := range []sampleKey{a, b, c} {
			if _, ok := s.get(k); ok {
				t.Fatalf("round %d: %v seen before it was put", round, k)
			}
		}
		s.put(a, 1)
		if _, ok := s.get(b); ok {
			t.Fatalf("round %d: b seen as a", round)
		}
		s.put(b, 2)
		s.put(c, 3)
		for k, want := range map[sampleKey]uint64{a: 1, b: 2, c: 3} {
			if v, ok := s.get(k); !ok || v != want {
				t.Errorf("round %d: get(%v) = %d, %v; want %d", round, k, v, ok, want)
			}
		}
		s.reset()
	}
}
