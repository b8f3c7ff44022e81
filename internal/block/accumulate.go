package block

// Add records one sample at t into m, as the block writer does (NaN values,
// and so stale markers, are not counted). Samples may come in any order;
// First and Last follow their timestamps. Callers that compute metrics
// from data (the head, a query over overlapping blocks) use it so that
// their metrics equal those a block would store.
func (m *IntervalMetrics) Add(t int64, v float64) { m.add(t, v) }
