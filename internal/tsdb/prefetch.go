package tsdb

import (
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// Read-ahead of a selection's samples.
//
// PromQL walks a Select's series one after the other, a sample at a time
// through its iterator. Decoding (tuples, the merge of a series' sources)
// is about half of that walk's CPU, and the engine uses one core. A
// prefetcher decodes the series of one Select in their order on another
// goroutine, in batches of up to batchSamples samples, a bounded number of
// batches ahead of the engine; the engine's iterators (batchIterator) walk
// the decoded arrays. Answers are those of the plain iterators: the
// producer is one (series.rawIterator).
//
// The engine's order is assumed, not required: a series asked for after
// the producer has passed it (the engine went back, or kept an iterator of
// a series after asking for the next), reads through its plain iterator,
// from where it stood. The producer decodes a series only after every
// earlier one, so a plain iterator never reads a series while the
// producer does.
//
// Locking: the producer goroutine owns its iterators and sends batches on
// a channel; mu serializes consumers (the engine's goroutine, normally
// one). The querier stops every prefetcher (stop waits for its producer)
// before it releases the head snapshots the producer reads.

const (
	batchSamples = 2048
	// aheadBatches bounds the decoded batches waiting for the engine
	// (~2 MiB at batchSamples).
	aheadBatches = 64
	// prefetchMinRange is the shortest selection range read ahead: a
	// short one (an instant query's lookback) decodes a few samples per
	// series, less than a hand-over costs.
	prefetchMinRange = 30 * 60 * 1000
)

type sampleBatch struct {
	series int // index in the prefetcher's series
	ts     []int64
	vs     []float64
	last   bool  // the series' last batch
	err    error // decoding error of the series, with last
}

var batchPool = sync.Pool{New: func() any {
	return &sampleBatch{ts: make([]int64, 0, batchSamples), vs: make([]float64, 0, batchSamples)}
}}

func getBatch(i int) *sampleBatch {
	b := batchPool.Get().(*sampleBatch)
	b.series, b.ts, b.vs, b.last, b.err = i, b.ts[:0], b.vs[:0], false, nil
	return b
}

func putBatch(b *sampleBatch) {
	if b != nil && cap(b.ts) == batchSamples {
		batchPool.Put(b)
	}
}

// usePrefetch reports whether a selection of n series over [mint, maxt]
// is worth reading ahead.
func usePrefetch(n int, mint, maxt int64) bool {
	return n > 1 && maxt >= mint && uint64(maxt)-uint64(mint) >= prefetchMinRange && runtime.GOMAXPROCS(0) > 1
}

type prefetcher struct {
	series []*series

	mu      sync.Mutex
	started bool
	stopped bool
	batches chan *sampleBatch
	done    chan struct{}
	wg      sync.WaitGroup
	cur     int          // series whose batches consumers take, -1 before the first
	pending *sampleBatch // received, of a series after the one asked for
}

func newPrefetcher(series []*series) *prefetcher {
	return &prefetcher{series: series, cur: -1}
}

// stop ends the producer and waits for it.
func (p *prefetcher) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.stopped = true
	if p.started {
		close(p.done)
		p.wg.Wait()
	}
}

func (p *prefetcher) run() {
	defer p.wg.Done()
	defer close(p.batches)
	var f filler
	for i, s := range p.series {
		if !f.fill(p, i, s) {
			return
		}
	}
}

// bulkIterator appends samples without a call per sample
// (seriesiter.Iterator).
type bulkIterator interface {
	AppendSamples(ts []int64, vs []float64, max int) ([]int64, []float64, bool)
}

// srcBuf is one source of a series being merged: its iterator and a
// buffer of its next samples.
type srcBuf struct {
	it   chunkenc.Iterator
	ts   []int64
	vs   []float64
	pos  int
	more bool // the iterator may have samples beyond ts
}

const srcBufSamples = 512

// refill reads the source's next samples; false when it has none.
func (b *srcBuf) refill() bool {
	b.ts, b.vs, b.pos = b.ts[:0], b.vs[:0], 0
	if !b.more {
		return false
	}
	if bi, ok := b.it.(bulkIterator); ok {
		b.ts, b.vs, b.more = bi.AppendSamples(b.ts, b.vs, srcBufSamples)
	} else {
		for len(b.ts) < srcBufSamples {
			if b.it.Next() == chunkenc.ValNone {
				b.more = false
				break
			}
			t, v := b.it.At()
			b.ts = append(b.ts, t)
			b.vs = append(b.vs, v)
		}
	}
	return len(b.ts) > 0
}

// filler decodes series into batches; its buffers and iterators are
// reused from series to series.
type filler struct {
	bufs []srcBuf
	live []*srcBuf
}

// fill sends series i's samples in batches; false if the prefetcher was
// stopped. The sources are merged as seriesiter.Merge merges them: in
// time order, the earlier source winning a timestamp held by several.
func (f *filler) fill(p *prefetcher, i int, s *series) bool {
	if len(s.deleted) > 0 {
		return f.fillPlain(p, i, s)
	}
	for len(f.bufs) < len(s.sources) {
		f.bufs = append(f.bufs, srcBuf{})
	}
	f.live = f.live[:0]
	var err error
	// drained reports whether l has no more samples, keeping the first
	// error of a source.
	drained := func(l *srcBuf) bool {
		if l.pos < len(l.ts) || l.refill() {
			return false
		}
		if e := l.it.Err(); e != nil && err == nil {
			err = e
		}
		return true
	}
	for j, src := range s.sources {
		b := &f.bufs[j]
		b.it = src.open(b.it)
		b.ts, b.vs, b.pos, b.more = b.ts[:0], b.vs[:0], 0, true
		if !drained(b) {
			f.live = append(f.live, b)
		}
	}
	out := getBatch(i)
	for len(f.live) > 0 && err == nil {
		if len(out.ts) == batchSamples {
			if !p.send(out) {
				return false
			}
			out = getBatch(i)
		}
		// The source with the least next timestamp (the earliest source
		// on a tie), and the least next timestamp of the others.
		best, bt, next := 0, f.live[0].ts[f.live[0].pos], int64(math.MaxInt64)
		for j := 1; j < len(f.live); j++ {
			switch t := f.live[j].ts[f.live[j].pos]; {
			case t < bt:
				next, best, bt = bt, j, t
			case t < next:
				next = t
			}
		}
		b := f.live[best]
		if bt == next {
			// Several sources hold bt: the earliest's sample is kept.
			out.ts = append(out.ts, bt)
			out.vs = append(out.vs, b.vs[b.pos])
			for _, l := range f.live {
				if l.ts[l.pos] == bt {
					l.pos++
				}
			}
		} else {
			// Copy b's run below next.
			end := b.pos + sort.Search(len(b.ts)-b.pos, func(k int) bool { return b.ts[b.pos+k] >= next })
			end = min(end, b.pos+batchSamples-len(out.ts))
			out.ts = append(out.ts, b.ts[b.pos:end]...)
			out.vs = append(out.vs, b.vs[b.pos:end]...)
			b.pos = end
		}
		f.live = slices.DeleteFunc(f.live, drained)
	}
	out.last, out.err = true, err
	return p.send(out)
}

// fillPlain sends series i's samples read through its plain iterator
// (tombstones apply).
func (f *filler) fillPlain(p *prefetcher, i int, s *series) bool {
	it := s.rawIterator(nil)
	out := getBatch(i)
	for it.Next() != chunkenc.ValNone {
		t, v := it.At()
		out.ts = append(out.ts, t)
		out.vs = append(out.vs, v)
		if len(out.ts) == batchSamples {
			if !p.send(out) {
				return false
			}
			out = getBatch(i)
		}
	}
	out.last, out.err = true, it.Err()
	return p.send(out)
}

func (p *prefetcher) send(b *sampleBatch) bool {
	select {
	case p.batches <- b:
		return true
	case <-p.done:
		putBatch(b)
		return false
	}
}

// recv returns the next batch, nil once the producer ended. Under mu.
func (p *prefetcher) recv() *sampleBatch {
	if b := p.pending; b != nil {
		p.pending = nil
		return b
	}
	return <-p.batches
}

// take returns the first batch of series i, or nil if the producer has
// passed it (or was stopped).
func (p *prefetcher) take(i int) *sampleBatch {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return nil
	}
	if !p.started {
		p.started = true
		p.batches = make(chan *sampleBatch, aheadBatches)
		p.done = make(chan struct{})
		p.wg.Add(1)
		go p.run()
	}
	for {
		b := p.recv()
		switch {
		case b == nil:
			return nil
		case b.series < i:
			putBatch(b)
		case b.series > i:
			p.pending = b
			return nil
		default:
			p.cur = i
			return b
		}
	}
}

// more returns the next batch of series i, or nil if a consumer has moved
// on to another series.
func (p *prefetcher) more(i int) *sampleBatch {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.cur != i || p.pending != nil {
		return nil
	}
	b := <-p.batches
	if b != nil && b.series != i {
		p.pending = b
		return nil
	}
	return b
}

// batchIterator is a chunkenc.Iterator over a series' prefetched batches,
// falling back to the series' plain iterator when the batches are gone.
type batchIterator struct {
	p   *prefetcher
	s   *series
	idx int
	b   *sampleBatch
	i   int // current sample in b; -1 before the first
	raw chunkenc.Iterator
	t   int64 // current sample
	v   float64
	// moved: a sample came from the batches and raw (if any) is not yet
	// positioned after it.
	moved bool
	err   error
	end   bool
}

func (it *batchIterator) reset(p *prefetcher, s *series, idx int, b *sampleBatch) {
	putBatch(it.b)
	*it = batchIterator{p: p, s: s, idx: idx, b: b, i: -1}
}

// advance loads the series' next batch; false at its end.
func (it *batchIterator) advance() bool {
	if it.b.last {
		it.err = it.b.err
		return false
	}
	nb := it.p.more(it.idx)
	if nb == nil {
		// The batches are gone: continue on the plain iterator.
		putBatch(it.b)
		it.b = nil
		it.raw = it.s.rawIterator(nil)
		return false
	}
	putBatch(it.b)
	it.b, it.i = nb, -1
	return true
}

func (it *batchIterator) Next() chunkenc.ValueType {
	if it.end {
		return chunkenc.ValNone
	}
	if it.raw != nil {
		return it.rawNext()
	}
	for {
		if it.i+1 < len(it.b.ts) {
			it.i++
			it.t, it.v, it.moved = it.b.ts[it.i], it.b.vs[it.i], true
			return chunkenc.ValFloat
		}
		if !it.advance() {
			if it.raw != nil {
				return it.rawNext()
			}
			it.end = true
			return chunkenc.ValNone
		}
	}
}

// rawNext steps the fallback iterator; its first step positions it after
// the last sample the batches gave.
func (it *batchIterator) rawNext() chunkenc.ValueType {
	if !it.moved {
		return it.rawResult(it.raw.Next())
	}
	it.moved = false
	return it.rawResult(it.raw.Seek(it.t + 1))
}

func (it *batchIterator) rawResult(vt chunkenc.ValueType) chunkenc.ValueType {
	if vt == chunkenc.ValNone {
		it.end = true
		it.err = it.raw.Err()
		return vt
	}
	it.t, it.v = it.raw.At()
	return vt
}

func (it *batchIterator) Seek(t int64) chunkenc.ValueType {
	if it.end {
		return chunkenc.ValNone
	}
	if it.raw != nil {
		if it.moved && it.t >= t {
			return chunkenc.ValFloat
		}
		it.moved = false
		return it.rawResult(it.raw.Seek(t))
	}
	if it.moved && it.t >= t {
		return chunkenc.ValFloat
	}
	for {
		ts := it.b.ts
		from := max(it.i, 0)
		if n := len(ts); n > from && ts[n-1] >= t {
			it.i = from + sort.Search(n-from, func(j int) bool { return ts[from+j] >= t })
			it.t, it.v, it.moved = ts[it.i], it.b.vs[it.i], true
			return chunkenc.ValFloat
		}
		it.i = len(ts) - 1
		if !it.advance() {
			if it.raw != nil {
				it.moved = false
				return it.rawResult(it.raw.Seek(t))
			}
			it.end = true
			return chunkenc.ValNone
		}
	}
}

// NextBatch returns the samples after the current one up to the end of
// the batch that holds them, and makes the last of them current: a whole
// batch per call instead of a call per sample (internal/queryeval reads
// series so). It returns nil at the series' end and once the batches are
// gone; Next then goes on where the batches stopped. The slices are the
// iterator's until its next call.
func (it *batchIterator) NextBatch() ([]int64, []float64) {
	if it.end || it.raw != nil {
		return nil, nil
	}
	for it.i+1 >= len(it.b.ts) {
		if !it.advance() {
			if it.raw == nil {
				it.end = true
			}
			return nil, nil
		}
	}
	from := it.i + 1
	it.i = len(it.b.ts) - 1
	it.t, it.v, it.moved = it.b.ts[it.i], it.b.vs[it.i], true
	return it.b.ts[from:], it.b.vs[from:]
}

func (it *batchIterator) At() (int64, float64) { return it.t, it.v }
func (it *batchIterator) AtT() int64           { return it.t }
func (it *batchIterator) AtST() int64          { return 0 }
func (it *batchIterator) Err() error           { return it.err }
func (it *batchIterator) AtHistogram(*histogram.Histogram) (int64, *histogram.Histogram) {
	panic("tsdb: AtHistogram on a float series")
}
func (it *batchIterator) AtFloatHistogram(*histogram.FloatHistogram) (int64, *histogram.FloatHistogram) {
	panic("tsdb: AtFloatHistogram on a float series")
}
