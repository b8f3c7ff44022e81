package thanosstore

// partitionerMaxGap is the largest gap of unwanted bytes between two wanted
// ranges that one GET still spans: Thanos' PartitionerMaxGapSize
// (pkg/store/bucket.go), used by its gapBasedPartitioner for postings,
// series and chunks alike.
const partitionerMaxGap = 512 * 1024

// part is one GET: the byte range [start, end) covering the wanted ranges
// with indexes [first, last).
type part struct {
	start, end  int64
	first, last int
}

// partition groups n ranges, sorted by start, into parts, starting a new
// part where the next range begins more than maxGap bytes after the end of
// the current one. Ranges may overlap. It is Thanos' gapBasedPartitioner.
func partition(n int, maxGap int64, rng func(i int) (start, end int64)) []part {
	var parts []part
	for k := 0; k < n; {
		p := part{first: k}
		p.start, p.end = rng(k)
		for k++; k < n; k++ {
			s, e := rng(k)
			if p.end+maxGap < s {
				break
			}
			p.end = max(p.end, e)
		}
		p.last = k
		parts = append(parts, p)
	}
	return parts
}
