package memory

import (
	"fmt"
	"testing"
	"time"
)

// Speed of the three hot paths. Compare runs with:
//
//	go test -run XXX -bench . -count 6 ./internal/memory/ | tee bench.txt
//	benchstat -row .name bench.txt
//
// Sub-benchmarks are named key=value. Extra metrics:
//   - Alloc release-ns/block: the share of ns/op spent releasing and
//     reclaiming (mode=release: SoftRelease, HardRelease, Advance, Reclaim
//     every partition of 4096 blocks; mode=pressure: only SoftRelease, the
//     limit makes Alloc reclaim inline, so that cost is inside Alloc).
//   - EnterExit slots: the number of reader slots (GOMAXPROCS*4 by default).
//   - Valid ns/ref: one op checks a batch of 1024 refs.

func BenchmarkAlloc(b *testing.B) {
	const perPart = 4096
	for _, mode := range []string{"release", "pressure"} {
		b.Run("mode="+mode, func(b *testing.B) {
			opts := Options{}
			if mode == "pressure" {
				opts.Limit = 8 << 20
			}
			m, err := New(opts)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			var part int64
			var n, ops int
			var release time.Duration
			for b.Loop() {
				if _, _, err := m.Alloc(part); err != nil {
					b.Fatal(err)
				}
				ops++
				if n++; n == perPart {
					t0 := time.Now()
					m.SoftRelease(part)
					if mode == "release" {
						m.HardRelease(part)
						m.Advance()
						m.Reclaim()
					}
					release += time.Since(t0)
					part++
					n = 0
				}
			}
			b.ReportMetric(float64(release.Nanoseconds())/float64(ops), "release-ns/block")
		})
	}
}

func BenchmarkEnterExit(b *testing.B) {
	b.Run("readers=1", func(b *testing.B) {
		m, _ := New(Options{})
		b.ReportAllocs()
		for b.Loop() {
			m.Enter().Exit()
		}
		b.ReportMetric(float64(len(m.slots)), "slots")
	})
	// slots=1 makes the GOMAXPROCS goroutines share one slot: the
	// fallback path, with every Enter and Exit contending on one word.
	for _, slots := range []int{0, 1} {
		name := "readers=parallel/slots=default"
		if slots > 0 {
			name = fmt.Sprintf("readers=parallel/slots=%d", slots)
		}
		b.Run(name, func(b *testing.B) {
			m, _ := New(Options{ReaderSlots: slots})
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					m.Enter().Exit()
				}
			})
			b.ReportMetric(float64(len(m.slots)), "slots")
		})
	}
}

func BenchmarkValid(b *testing.B) {
	const batch = 1024
	m, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	// Partition 1 hard-released (its refs invalid), partition 2 live; the
	// refs alternate, in allocation order.
	var refs []Ref
	for range batch / 2 {
		for p := int64(1); p <= 2; p++ {
			id, v, err := m.Alloc(p)
			if err != nil {
				b.Fatal(err)
			}
			refs = append(refs, MakeRef(id, v))
		}
	}
	m.HardRelease(1)
	check := func() int {
		n := 0
		for _, r := range refs {
			if m.Valid(r) {
				n++
			}
		}
		return n
	}
	if n := check(); n != batch/2 {
		b.Fatalf("%d valid refs, want %d", n, batch/2)
	}
	b.Run("readers=1", func(b *testing.B) {
		for b.Loop() {
			check()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/ref")
	})
	b.Run("readers=parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				check()
			}
		})
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/ref")
	})
}
