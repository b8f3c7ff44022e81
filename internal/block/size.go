package block

// SeriesBytes returns the bytes local series id takes in the block's
// files: in the data, its value columns and, for each group it is in, its
// share of the group's timestamp column (divided by the group's columns);
// in the index, its block metrics. It is 0, 0 for an unknown id.
func (r *Reader) SeriesBytes(id uint32) (index, data int64) {
	if int(id) >= len(r.series) {
		return 0, 0
	}
	for _, l := range r.series[id] {
		g := &r.groups[l.group]
		c := &g.cols[l.col]
		data += c.dataLen()
		if n := int64(len(g.cols)); n > 0 {
			data += g.tsLen / n
		}
	}
	if int(id) < len(r.mOffs) {
		end := len(r.metrics)
		if int(id)+1 < len(r.mOffs) {
			end = r.mOffs[id+1]
		}
		index = int64(end - r.mOffs[id])
	}
	return index, data
}
