package block

import "context"

// SeriesDataBytes returns the bytes local series id takes in the block's
// data: its value columns and, for each group it is in, its share of the
// group's timestamp column (divided by the group's columns). It is 0 for
// an unknown id.
func (r *Reader) SeriesDataBytes(id uint32) int64 {
	if int(id) >= len(r.series) {
		return 0
	}
	var data int64
	for _, l := range r.series[id] {
		g := &r.groups[l.group]
		c := &g.cols[l.col]
		data += c.dataLen()
		if n := int64(len(g.cols)); n > 0 {
			data += g.tsLen / n
		}
	}
	return data
}

// SeriesBytes returns SeriesDataBytes and, in the index, the bytes of
// local series id's block metrics (a remote block's are fetched if they
// are not in memory). It is 0, 0 for an unknown id. A scan over many
// series takes MetricsSection once and calls RecordLen instead.
func (r *Reader) SeriesBytes(ctx context.Context, id uint32) (index, data int64, err error) {
	if int(id) >= len(r.series) {
		return 0, 0, nil
	}
	ms, err := r.MetricsSection(ctx)
	if err != nil {
		return 0, 0, err
	}
	return ms.RecordLen(id), r.SeriesDataBytes(id), nil
}
