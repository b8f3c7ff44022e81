package rollup

import "math"

// AppendSlots consolidates one series' samples onto the finest grid of
// its schema and appends the n slot values to dst: slot i is [start +
// i·step, start + (i+1)·step) in ms, its value the method over the samples
// inside it (count: how many), or NaN when there is none. ts must be
// sorted; samples outside the grid are ignored except that the last one
// before a slot may hold over it (heartbeat, ms): an empty slot takes the
// value of the latest earlier sample when that sample is at most
// heartbeat older than the slot's end (never for Count, which counts
// samples). NaN samples, which include Prometheus' stale markers, are
// unknown: they count for nothing and end a hold.
func AppendSlots(dst []float64, ts []int64, vs []float64, start, step int64, n int, m Method, heartbeat int64) []float64 {
	j := 0
	holdT, holdV, hold := int64(0), 0.0, false
	for j < len(ts) && ts[j] < start {
		holdT, holdV, hold = ts[j], vs[j], !math.IsNaN(vs[j])
		j++
	}
	for i := 0; i < n; i++ {
		lo := start + int64(i)*step
		hi := lo + step
		var acc float64
		cnt := 0
		for ; j < len(ts) && ts[j] < hi; j++ {
			v := vs[j]
			holdT, holdV, hold = ts[j], v, !math.IsNaN(v)
			if math.IsNaN(v) {
				continue
			}
			if cnt == 0 {
				acc = v
			} else {
				acc = m.fold(acc, v)
			}
			cnt++
		}
		switch {
		case cnt > 0 && m == Average:
			dst = append(dst, acc/float64(cnt))
		case cnt > 0 && m == Count:
			dst = append(dst, float64(cnt))
		case cnt > 0:
			dst = append(dst, acc)
		case hold && m != Count && hi-holdT <= heartbeat:
			dst = append(dst, holdV)
		default:
			dst = append(dst, math.NaN())
		}
	}
	return dst
}

// AppendBuckets consolidates finest-grid slots k at a time into the
// buckets of a coarser archive and appends them to dst, whisper's way:
// a bucket is known when at least xff of its k slots are (and at least
// one), and then it is the method over the known slots (Count sums the
// slots' counts, so a bucket counts samples; Average is the mean of the
// known slots, the time-weighted mean over the known time). len(slots)
// must be a multiple of k.
func AppendBuckets(dst, slots []float64, k int, m Method, xff float64) []float64 {
	for b := 0; b+k <= len(slots); b += k {
		var acc float64
		known := 0
		for _, v := range slots[b : b+k] {
			if math.IsNaN(v) {
				continue
			}
			if known == 0 {
				acc = v
			} else {
				acc = m.fold(acc, v)
			}
			known++
		}
		if known == 0 || float64(known)/float64(k) < xff {
			dst = append(dst, math.NaN())
			continue
		}
		if m == Average {
			acc /= float64(known)
		}
		dst = append(dst, acc)
	}
	return dst
}

// fold adds v to acc, the method's value over the values before v: the
// sum for Average (divided by the count at the end), Sum and Count (whose
// values are counts when it folds slots).
func (m Method) fold(acc, v float64) float64 {
	switch m {
	case Average, Sum, Count:
		return acc + v
	case Min:
		return math.Min(acc, v)
	case Max:
		return math.Max(acc, v)
	case Last:
		return v
	}
	return acc
}
