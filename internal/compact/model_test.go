package compact

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/block"
)

// TestMergeModel merges random overlapping blocks (random Seq, grouping,
// duplicates with different values, special floats, tombstones, retention,
// small group limits) and compares the output sample for sample with a
// map-based merge of the same inputs.
func TestMergeModel(t *testing.T) {
	iters := 60
	if testing.Short() {
		iters = 10
	}
	dict, dir := newDict(t)
	for it := range iters {
		rng := rand.New(rand.NewPCG(uint64(it), 7))
		t.Run(fmt.Sprint("seed=", it), func(t *testing.T) {
			const step = 1000
			universe := make([]labels.Labels, 2+rng.IntN(8))
			for i := range universe {
				universe[i] = labels.FromStrings("__name__", fmt.Sprint("m", i%3), "instance", fmt.Sprint("i", i/3))
			}
			specials := []float64{math.Float64frombits(value.StaleNaN), math.NaN(), math.Float64frombits(0x7ff0000000000abc),
				math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0}
			value := func() float64 {
				if rng.IntN(10) == 0 {
					return specials[rng.IntN(len(specials))]
				}
				return float64(rng.IntN(1000)) / 8
			}
			n := 1 + rng.IntN(5)
			inputs := make([]*block.Reader, n)
			specs := make([]spec, n)
			for b := range specs {
				mint := int64(rng.IntN(20)) * step * 10
				sp := spec{mint: mint, maxt: mint + int64(1+rng.IntN(20))*step*10, seq: uint64(rng.IntN(3))}
				groups := map[int][]ser{}
				for _, lset := range universe {
					if rng.IntN(3) == 0 {
						continue
					}
					s := ser{lset: lset}
					density := 1 + rng.IntN(4)
					for tt := sp.mint; tt < sp.maxt; tt += step {
						if rng.IntN(density) == 0 {
							s.samples = append(s.samples, sample{tt + int64(rng.IntN(3)), value()})
						}
					}
					g := rng.IntN(3)
					groups[g] = append(groups[g], s)
				}
				for g := range 3 {
					if len(groups[g]) > 0 {
						sp.groups = append(sp.groups, groups[g])
					}
				}
				specs[b] = sp
				inputs[b] = writeBlock(t, dir, dict, sp)
			}
			deleted := map[string][][2]int64{}
			for _, lset := range universe {
				for range rng.IntN(3) {
					// on the sample grid, so interval ends hit samples
					a := int64(rng.IntN(200))*step + int64(rng.IntN(3))
					deleted[lset.String()] = append(deleted[lset.String()], [2]int64{a, a + int64(rng.IntN(30))*step})
				}
			}
			dropBefore := int64(math.MinInt64)
			if rng.IntN(2) == 0 {
				dropBefore = int64(rng.IntN(100))*step + int64(rng.IntN(3))
			}
			opts := Options{
				GroupKey:      byInstance,
				Deleted:       func(l labels.Labels) [][2]int64 { return deleted[l.String()] },
				DropBefore:    dropBefore,
				MaxGroupWidth: 1 + rng.IntN(4),
				MaxGroupCells: 1 + rng.IntN(200),
			}

			// The model: inputs in (Seq, position) order; the first sample
			// of a series at a timestamp wins.
			order := make([]int, n)
			for i := range order {
				order[i] = i
			}
			slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(specs[a].seq, specs[b].seq) })
			model := map[string]map[int64]float64{}
			for _, b := range order {
				for _, g := range specs[b].groups {
					for _, s := range g {
						k := s.lset.String()
						if model[k] == nil {
							model[k] = map[int64]float64{}
						}
						for _, x := range s.samples {
							if _, dup := model[k][x.t]; dup || x.t < dropBefore || deletedAt(deleted[k], x.t) {
								continue
							}
							model[k][x.t] = x.v
						}
					}
				}
			}
			want := map[string][]sample{}
			total := 0
			for k, m := range model {
				for tt, v := range m {
					want[k] = append(want[k], sample{tt, v})
				}
				slices.SortFunc(want[k], func(a, b sample) int { return cmp.Compare(a.t, b.t) })
				total += len(m)
			}

			out, meta := merge(t, dict, inputs, opts)
			requireSamples(t, want, readAll(t, out))
			require.Equal(t, total, meta.Stats.Samples)
			var seq uint64
			for _, sp := range specs {
				seq = max(seq, sp.seq)
			}
			require.Equal(t, seq, meta.Seq)
			require.Len(t, meta.Compaction.Parents, n)
		})
	}
}

func deletedAt(ivs [][2]int64, t int64) bool {
	for _, iv := range ivs {
		if iv[0] <= t && t <= iv[1] {
			return true
		}
	}
	return false
}
