package compact

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/block"
)

// BenchmarkMerge merges blocks of groups of 10 series at 15 s: six
// adjacent 2 h partitions into one 12 h block (kind=level), or two blocks
// over one 2 h partition where the second repeats half of the first's
// timestamps with other values and adds as many new ones (kind=vertical).
// B/sample is the output's index and data bytes per sample.
//
// Compare two commits with:
//
//	go test -run '^$' -bench BenchmarkMerge -count 6 ./internal/compact/ > new.txt
//	benchstat old.txt new.txt
func BenchmarkMerge(b *testing.B) {
	const width, step, rows = 10, 15_000, 480
	for _, kind := range []string{"level", "vertical"} {
		for _, nseries := range []int{100, 1000} {
			b.Run(fmt.Sprintf("kind=%s/series=%d", kind, nseries), func(b *testing.B) {
				dict, dir := newDict(b)
				rng := rand.New(rand.NewPCG(1, 2))
				walk := make([]float64, nseries)
				gen := func(mint int64, keep func(i int) bool, shift int64) [][]ser {
					var groups [][]ser
					for g := 0; g < nseries/width; g++ {
						var grp []ser
						for s := 0; s < width; s++ {
							k := g*width + s
							x := ser{lset: labels.FromStrings("__name__", fmt.Sprint("metric_", s), "instance", fmt.Sprint("host-", g), "job", "bench")}
							for i := 0; i < rows; i++ {
								if !keep(i) {
									continue
								}
								walk[k] += math.Round(rng.NormFloat64()*100) / 100
								x.samples = append(x.samples, sample{mint + int64(i)*step + shift, walk[k]})
							}
							grp = append(grp, x)
						}
						groups = append(groups, grp)
					}
					return groups
				}
				var inputs []*block.Reader
				all := func(int) bool { return true }
				switch kind {
				case "level":
					for p := int64(0); p < 6; p++ {
						inputs = append(inputs, writeBlock(b, dir, dict, spec{mint: p * 2 * h, maxt: (p + 1) * 2 * h, groups: gen(p*2*h, all, 0)}))
					}
				case "vertical":
					inputs = append(inputs, writeBlock(b, dir, dict, spec{mint: 0, maxt: 2 * h, groups: gen(0, all, 0)}))
					inputs = append(inputs, writeBlock(b, dir, dict, spec{mint: 0, maxt: 2 * h, seq: 1, groups: gen(0, func(i int) bool { return i%2 == 0 }, 0)}))
					inputs = append(inputs, writeBlock(b, dir, dict, spec{mint: 0, maxt: 2 * h, seq: 2, groups: gen(0, func(i int) bool { return i%2 == 0 }, step/2)}))
				}
				opts := Options{GroupKey: func(l labels.Labels) string { return l.Get("instance") }, DropBefore: math.MinInt64}
				parent := b.TempDir()
				var meta block.Meta
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					dir, m, err := Merge(parent, inputs, dict, opts)
					if err != nil {
						b.Fatal(err)
					}
					meta = m
					b.StopTimer()
					os.RemoveAll(dir)
					b.StartTimer()
				}
				b.ReportMetric(float64(meta.Stats.DataBytes+meta.Stats.IndexBytes)/float64(meta.Stats.Samples), "B/sample")
				b.ReportMetric(float64(meta.Stats.Samples), "samples/op")
			})
		}
	}
}
