package block

import (
	"encoding/binary"
	"math"
	"sync"
)

// The version 2 encoding of one series' block metrics (index version 2,
// docs/format/block.md "metrics"): columnar, every float field mapped to
// an integer (a decimal mantissa at a digit count shared by the series,
// or the float's ordered bits), predicted from fields already decoded,
// and the residuals written by the integer column coder of intcol.go.
//
// Columns, in order: interval gaps, count, first, last, min, max, sum,
// sum of squares.
// Persisted (the bit positions of a record's modes): explicit numbers.
const (
	colGaps  = 0
	colCount = 1
	colFirst = 2
	colLast  = 3
	colMin   = 4
	colMax   = 5
	colSum   = 6
	colSq    = 7
	numCols  = 8
)

// Float fields, in the order of the exception flags (the exc byte's bits
// 0–5) and of the exception lists. Persisted: explicit numbers.
const (
	fFirst    = 0
	fLast     = 1
	fMin      = 2
	fMax      = 3
	fSum      = 4
	fSq       = 5
	numFloats = 6
)

// domainOrdered (byte 0, bits 0–4) says the value fields are stored as
// ordered float bits; 0…maxDigits say decimal mantissas at that many
// digits after the point.
const domainOrdered = 31

// Sum predictors (byte 0, bits 6–7): the predicted mean of an interval.
const (
	predMidrange = 0 // (min + max) / 2
	predEnds     = 1 // (first + last) / 2
	predMix      = 2 // (min + max + first + last) / 4
	numPreds     = 3
)

// metricsPlan is how one series is encoded.
type metricsPlan struct {
	domain int   // value fields: digits or domainOrdered
	sumDec bool  // Sum as a mantissa at domain digits
	sqDec  bool  // SumSq as a mantissa at 2·domain digits
	unit   int64 // ≥ 1: decimal mantissas are stored divided by unit (SumSq's by unit²)
}

// maxUnit bounds a plan's unit so that unit² fits an int64.
const maxUnit = 1 << 31

// value returns the integer of value field v (false: an exception).
func (p *metricsPlan) value(v float64) (int64, bool) {
	if p.domain == domainOrdered {
		return ordered(v), true
	}
	return p.reduce(mantissaAt(v, p.domain))
}

// sum returns the integer of a Sum (false: an exception).
func (p *metricsPlan) sum(v float64) (int64, bool) { return p.reduce(mantissaAt(v, p.domain)) }

// sq returns the integer of a SumSq (false: an exception).
func (p *metricsPlan) sq(v float64) (int64, bool) {
	m, ok := mantissaAt(v, 2*p.domain)
	if !ok || m%(p.unit*p.unit) != 0 {
		return 0, false
	}
	return m / (p.unit * p.unit), true
}

func (p *metricsPlan) reduce(m int64, ok bool) (int64, bool) {
	if !ok || m%p.unit != 0 {
		return 0, false
	}
	return m / p.unit, true
}

// allSq reports whether every SumSq of ms has an integer under p.
func allSq(ms []IntervalMetrics, p *metricsPlan) bool {
	for i := range ms {
		if _, ok := p.sq(ms[i].SumSq); !ok {
			return false
		}
	}
	return true
}

// unitOf returns the greatest common divisor of the mantissas at k digits
// of the fields f gives (those that have one), capped to 1 above maxUnit.
func unitOf(ms []IntervalMetrics, k int, g uint64, f func(*IntervalMetrics) []float64) uint64 {
	for i := range ms {
		for _, v := range f(&ms[i]) {
			if m, ok := mantissaAt(v, k); ok {
				u := uint64(m)
				if m < 0 {
					u = -u
				}
				for u != 0 {
					g, u = u, g%u
				}
			}
		}
	}
	return g
}

// AppendMetrics appends the version 2 encoding of one series' block
// metrics ms to dst: uvarint length, then the record (empty when ms is).
// base is the interval index the first interval is stored relative to
// (⌊minTime / interval⌋ in a block). Every field of every interval
// round-trips bit for bit through DecodeMetrics whatever ms holds (NaNs,
// infinities, −0, unsorted intervals); the bytes depend on ms and base
// only.
func AppendMetrics(dst []byte, ms []IntervalMetrics, base int64) []byte {
	if len(ms) == 0 {
		return append(dst, 0)
	}
	e := encoderPool.Get().(*metricsEncoder)
	defer encoderPool.Put(e)
	best := -1
	for _, p := range metricsPlans(ms) {
		if e.rec = e.appendRecord(e.rec[:0], ms, base, p); best < 0 || len(e.rec) < len(e.best) {
			best = len(e.rec)
			e.rec, e.best = e.best, e.rec
		}
	}
	dst = binary.AppendUvarint(dst, uint64(len(e.best)))
	return append(dst, e.best...)
}

// metricsEncoder holds an encoding's buffers, reused through encoderPool.
type metricsEncoder struct {
	cols          [numCols][]int64
	vals          [][4]int64
	res, sums, qs []int64
	exc           [numFloats][]int
	rec, best     []byte
}

var encoderPool = sync.Pool{New: func() any { return new(metricsEncoder) }}

// metricsPlans returns the plans worth trying for ms, the likely best
// first: the digit count with the fewest values that are not decimal at
// it (those become exceptions), and, when there are any, the ordered
// domain too; likewise for the sums.
func metricsPlans(ms []IntervalMetrics) []metricsPlan {
	var seen [maxDigits + 1]bool
	for i := range ms {
		for _, v := range [...]float64{ms[i].First, ms[i].Last, ms[i].Min, ms[i].Max} {
			if d := digitsOf(v); d >= 0 {
				seen[d] = true
			}
		}
	}
	domain, fails := domainOrdered, 4*len(ms)
	for k, ok := range seen {
		if !ok {
			continue
		}
		n := 0
		for i := range ms {
			for _, v := range [...]float64{ms[i].First, ms[i].Last, ms[i].Min, ms[i].Max} {
				if _, ok := mantissaAt(v, k); !ok {
					n++
				}
			}
		}
		if n < fails {
			domain, fails = k, n
		}
	}
	domains := []int{domain}
	if domain != domainOrdered && fails > 0 {
		domains = append(domains, domainOrdered)
	}
	var plans []metricsPlan
	for _, dom := range domains {
		if dom == domainOrdered {
			plans = append(plans, metricsPlan{domain: dom, unit: 1})
			continue
		}
		// The values' common unit, and the sums' if they are decimal
		// (exact sums of values in a unit are in that unit).
		gv := unitOf(ms, dom, 0, func(m *IntervalMetrics) []float64 { return []float64{m.First, m.Last, m.Min, m.Max} })
		for _, sumDec := range decOptions(ms, func(m *IntervalMetrics) float64 { return m.Sum }, dom) {
			g := gv
			if sumDec {
				g = unitOf(ms, dom, g, func(m *IntervalMetrics) []float64 { return []float64{m.Sum} })
			}
			unit := int64(1)
			if g > 1 && g <= maxUnit {
				unit = int64(g)
			}
			sqs := []bool{false}
			if sumDec && 2*dom <= maxDigits {
				sqs = decOptions(ms, func(m *IntervalMetrics) float64 { return m.SumSq }, 2*dom)
			}
			for _, sqDec := range sqs {
				p := metricsPlan{domain: dom, sumDec: sumDec, sqDec: sqDec, unit: unit}
				plans = append(plans, p)
				// A unit the samples between min and max need not share
				// shows in SumSq; in a short series it may not pay.
				if unit > 1 && (len(ms) < 16 || sqDec && !allSq(ms, &p)) {
					p.unit = 1
					plans = append(plans, p)
				}
			}
		}
	}
	return plans
}

// decOptions returns whether to try field f as a mantissa at k digits:
// true only if all are decimal there, false only if none is, else both.
func decOptions(ms []IntervalMetrics, f func(*IntervalMetrics) float64, k int) []bool {
	n := 0
	for i := range ms {
		if _, ok := mantissaAt(f(&ms[i]), k); ok {
			n++
		}
	}
	switch n {
	case len(ms):
		return []bool{true}
	case 0:
		return []bool{false}
	}
	return []bool{true, false}
}

// appendRecord appends the record of ms under plan p (without its
// length).
func (e *metricsEncoder) appendRecord(dst []byte, ms []IntervalMetrics, base int64, p metricsPlan) []byte {
	n := len(ms)
	cols := &e.cols
	for c := range cols {
		growInts(&cols[c], n)
	}
	exc := &e.exc
	for f := range exc {
		exc[f] = exc[f][:0]
	}
	contiguous := true
	for i := 1; i < n; i++ {
		cols[colGaps][i-1] = ms[i].Interval - ms[i-1].Interval - 1
		contiguous = contiguous && cols[colGaps][i-1] == 0
	}
	cols[colGaps] = cols[colGaps][:n-1]

	// Value fields: first from the last before it, last from first, min
	// and max as excursions below and above them.
	// toInt is field fd's value v of interval i as an integer, or the
	// prediction pred, i noted as an exception, where v has none.
	toInt := func(fd, i int, v float64, pred int64) int64 {
		x, ok := p.value(v)
		if !ok {
			x, exc[fd] = pred, append(exc[fd], i)
		}
		return x
	}
	if cap(e.vals) < n {
		e.vals = make([][4]int64, n)
	}
	vals := e.vals[:n] // first, last, min, max
	prevL := int64(0)
	for i := range ms {
		m := &ms[i]
		cols[colCount][i] = int64(m.Count)
		f := toInt(fFirst, i, m.First, prevL)
		l := toInt(fLast, i, m.Last, f)
		lo, hi := min(f, l), max(f, l)
		mn := toInt(fMin, i, m.Min, lo)
		mx := toInt(fMax, i, m.Max, hi)
		cols[colFirst][i], cols[colLast][i] = f-prevL, l-f
		cols[colMin][i], cols[colMax][i] = lo-mn, mx-hi
		vals[i] = [4]int64{f, l, mn, mx}
		prevL = l
	}

	// Sum: the residual from count × the predicted mean; the predictor
	// whose residuals encode smallest.
	pred, size := 0, -1
	res := growInts(&e.res, n)
	for sel := range numPreds {
		for i := range ms {
			res[i] = sumResidual(&ms[i], &vals[i], sel, &p)
		}
		if _, sz := bestColMode(res); size < 0 || sz < size {
			pred, size = sel, sz
			copy(cols[colSum], res)
		}
	}
	sums := growInts(&e.sums, n) // Sum's mantissas, exceptions replaced by their prediction
	for i := range ms {
		if !p.sumDec {
			continue
		}
		s, ok := p.sum(ms[i].Sum)
		if !ok {
			exc[fSum] = append(exc[fSum], i)
			s = sumPredDec(pred, int64(ms[i].Count), &vals[i])
			cols[colSum][i] = 0
		}
		sums[i] = s
	}
	// SumSq: the residual from the sum of squares of Count values equal
	// to the (rounded) mean plus a share (scale/256, the scale that
	// encodes smallest) of Count × range², since Σ(x − c)² grows with the
	// spread; with exact sums Σx² ≡ Σx (mod 2), so the residual's last
	// bit is implied (parity).
	var scale int
	parity := p.sqDec
	if p.sqDec {
		qs := growInts(&e.qs, n)
		odd := 0 // intervals whose sums break parity (a substituted Sum)
		for i := range ms {
			q, ok := p.sq(ms[i].SumSq)
			if ok && (q-sums[i])&1 != 0 {
				odd++
			}
			qs[i] = q
		}
		// Parity saves a bit per interval; an interval that breaks it
		// costs an exception (about 10 bytes).
		parity = odd*10*8 < n
		for i := range ms {
			if _, ok := p.sq(ms[i].SumSq); !ok || parity && (qs[i]-sums[i])&1 != 0 {
				exc[fSq] = append(exc[fSq], i)
			}
		}
		if n >= minScaled {
			scale = bestSqScale(ms, qs, sums, vals, exc[fSq], parity, res)
		}
		for i := range ms {
			cols[colSq][i] = sqResidual(qs[i], sums[i], ms[i].Count, &vals[i], scale, parity)
		}
		for _, i := range exc[fSq] {
			cols[colSq][i] = 0
		}
	} else {
		for i := range ms {
			cols[colSq][i] = ordered(ms[i].SumSq) - ordered(sqPredFloat(ms[i].Sum, ms[i].Count))
		}
	}

	dst = binary.AppendUvarint(dst, uint64(n))
	dst = binary.AppendUvarint(dst, zigzag(ms[0].Interval-base))
	b0 := byte(p.domain) | byte(pred)<<6
	if contiguous {
		b0 |= 1 << 5
	}
	var b1, excFlags byte
	for f := range exc {
		if len(exc[f]) > 0 {
			excFlags |= 1 << f
		}
	}
	for bit, on := range [...]bool{p.sumDec, p.sqDec, parity, excFlags != 0, p.unit > 1} {
		if on {
			b1 |= 1 << bit
		}
	}
	var modes [numCols]int
	var mbits uint16
	for c := range cols {
		switch {
		case n <= maxImplicitModes:
			modes[c] = colVarint
		case c != colGaps || !contiguous:
			modes[c], _ = bestColMode(cols[c])
		}
		mbits |= uint16(modes[c]) << (2 * c)
	}
	dst = append(dst, b0, b1)
	if p.unit > 1 {
		dst = binary.AppendUvarint(dst, uint64(p.unit))
	}
	if p.sqDec && n >= minScaled {
		dst = append(dst, byte(scale))
	}
	if excFlags != 0 {
		dst = append(dst, excFlags)
	}
	if n > maxImplicitModes {
		dst = binary.LittleEndian.AppendUint16(dst, mbits)
	}
	for c := range cols {
		if c != colGaps || !contiguous {
			dst = appendCol(dst, cols[c], modes[c])
		}
	}
	for f, idx := range exc {
		if len(idx) == 0 {
			continue
		}
		dst = binary.AppendUvarint(dst, uint64(len(idx)))
		prev := -1
		for _, i := range idx {
			dst = binary.AppendUvarint(dst, uint64(i-prev-1))
			prev = i
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(floatField(&ms[i], f)))
		}
	}
	return dst
}

// sumResidual is the Sum column's value for m under predictor sel.
func sumResidual(m *IntervalMetrics, v *[4]int64, sel int, p *metricsPlan) int64 {
	if !p.sumDec {
		return ordered(m.Sum) - ordered(sumPredFloat(sel, m))
	}
	s, ok := p.sum(m.Sum)
	if !ok {
		return 0 // an exception
	}
	return s - sumPredDec(sel, int64(m.Count), v)
}

// sumPredDec predicts the Sum mantissa from count n and the mantissas v
// (first, last, min, max). Arithmetic wraps; the decoder repeats it.
func sumPredDec(sel int, n int64, v *[4]int64) int64 {
	switch sel {
	case predMidrange:
		return n * (v[2] + v[3]) >> 1
	case predEnds:
		return n * (v[0] + v[1]) >> 1
	default:
		return n * (v[0] + v[1] + v[2] + v[3]) >> 2
	}
}

// sumPredFloat predicts Sum from the float fields. No product is added
// to, so no compiler may fuse an FMA and every platform computes the same
// value; a NaN (whose bits vary by platform) predicts 0.
func sumPredFloat(sel int, m *IntervalMetrics) float64 {
	var p float64
	switch sel {
	case predMidrange:
		p = float64(m.Count) * (0.5 * (m.Min + m.Max))
	case predEnds:
		p = float64(m.Count) * (0.5 * (m.First + m.Last))
	default:
		p = float64(m.Count) * (0.25 * ((m.Min + m.Max) + (m.First + m.Last)))
	}
	if p != p {
		return 0
	}
	return p
}

// sqPredDec predicts the SumSq mantissa from the Sum mantissa s and count
// n (inv is 1/n): 2cs − nc² with c about the mean, so that the residual
// is Σ(x − c)² (≥ 0, small) for exact sums. Arithmetic wraps. c is
// s × inv rounded: no division per interval, the same on every platform.
func sqPredDec(s int64, n uint64, inv float64) int64 {
	if n == 0 {
		return 0
	}
	c := math.Round(float64(s) * inv)
	if !(math.Abs(c) < 1<<62) {
		return 0
	}
	ci := int64(c)
	return 2*ci*s - int64(n)*ci*ci
}

// Small records leave out what cannot pay for its bytes: with at most
// maxImplicitModes intervals every column is colVarint and the modes are
// not written; with fewer than minScaled the SumSq scale is 0 and not
// written.
const (
	maxImplicitModes = 2
	minScaled        = 8
)

// maxSqScale bounds the SumSq scale: Σ(x − mean)² ≤ n·range²/4.
const maxSqScale = 64

// sqResidual is the SumSq column's value for mantissa q of an interval
// of count n, Sum mantissa s and value mantissas v.
func sqResidual(q, s int64, n uint64, v *[4]int64, scale int, parity bool) int64 {
	pq := sqPredDec(s, n, 1/float64(n)) + sqSpread(n, v, scale)
	e := q - pq
	if parity {
		e = (e - (s-pq)&1) >> 1
	}
	return e
}

// sqFromResidual inverts sqResidual.
func sqFromResidual(e, s int64, n uint64, inv float64, v *[4]int64, scale int, parity bool) int64 {
	pq := sqPredDec(s, n, inv) + sqSpread(n, v, scale)
	if parity {
		e = e<<1 + (s-pq)&1
	}
	return pq + e
}

// sqSpread is scale/256 of n × (max − min)², arithmetic wrapping.
func sqSpread(n uint64, v *[4]int64, scale int) int64 {
	r := v[3] - v[2]
	return int64(scale) * int64(n) * r * r >> 8
}

// bestSqScale returns the scale in [0, maxSqScale] whose SumSq residuals
// encode smallest among 0 and the least-squares fit of the residuals at
// scale 0 to n·range²/256, and its neighbours.
func bestSqScale(ms []IntervalMetrics, qs, sums []int64, vals [][4]int64, exc []int, parity bool, buf []int64) int {
	var sxy, sxx float64
	for i := range ms {
		x := float64(sqSpread(ms[i].Count, &vals[i], 1))
		y := float64(sqResidual(qs[i], sums[i], ms[i].Count, &vals[i], 0, false))
		sxy += x * y
		sxx += x * x
	}
	fit := 0
	if sxx > 0 && sxy > 0 {
		fit = int(min(math.Round(sxy/sxx), maxSqScale))
	}
	size := func(scale int) int {
		for i := range ms {
			buf[i] = sqResidual(qs[i], sums[i], ms[i].Count, &vals[i], scale, parity)
		}
		for _, i := range exc {
			buf[i] = 0
		}
		_, n := bestColMode(buf)
		return n
	}
	best, bestSize := 0, size(0)
	for sc := max(fit-2, 1); sc <= min(fit+2, maxSqScale); sc++ {
		if n := size(sc); n < bestSize {
			best, bestSize = sc, n
		}
	}
	return best
}

// sqPredFloat predicts SumSq from Sum and count: Sum²/n, the least sum of
// squares of n values with that sum.
func sqPredFloat(sum float64, n uint64) float64 {
	if n == 0 {
		return 0
	}
	p := sum * (sum / float64(n))
	if p != p {
		return 0
	}
	return p
}

func floatField(m *IntervalMetrics, f int) float64 {
	switch f {
	case fFirst:
		return m.First
	case fLast:
		return m.Last
	case fMin:
		return m.Min
	case fMax:
		return m.Max
	case fSum:
		return m.Sum
	}
	return m.SumSq
}

func setFloatField(m *IntervalMetrics, f int, v float64) {
	switch f {
	case fFirst:
		m.First = v
	case fLast:
		m.Last = v
	case fMin:
		m.Min = v
	case fMax:
		m.Max = v
	case fSum:
		m.Sum = v
	default:
		m.SumSq = v
	}
}

// metricsScratch holds a decode's columns and exceptions.
type metricsScratch struct {
	gaps []int64
	exc  [numFloats][]excEntry
}

type excEntry struct {
	i    int
	bits uint64
}

var scratchPool = sync.Pool{New: func() any { return new(metricsScratch) }}

// DecodeMetrics decodes one series' metrics written by AppendMetrics with
// the same base from the start of src, appends them to dst and returns
// dst and the bytes read. Errors are *CorruptionErrors whose Offset is
// from the start of src (File empty).
func DecodeMetrics(dst []IntervalMetrics, src []byte, base int64) ([]IntervalMetrics, int, error) {
	d := &decbuf{b: src, what: "metrics"}
	ln := d.uvarint()
	if d.err == nil && ln > uint64(len(src)-d.pos) {
		d.fail("record of %d bytes, %d left", ln, len(src)-d.pos)
	}
	if d.err != nil {
		return dst, 0, d.err
	}
	end := d.pos + int(ln)
	if ln == 0 {
		return dst, end, nil
	}
	d.b = src[:end:end]
	dst = decodeRecord(dst, d, base)
	if d.err == nil && d.pos != end {
		d.fail("%d bytes after the record", end-d.pos)
	}
	if d.err != nil {
		return dst, 0, d.err
	}
	return dst, end, nil
}

func decodeRecord(dst []IntervalMetrics, d *decbuf, base int64) []IntervalMetrics {
	start := d.pos
	n := d.uvarint()
	// Each of seven columns takes at least min(n, 2 per forBlock values)
	// bytes: a bound on n before anything is allocated.
	if d.err == nil && (n == 0 || 7*min(n, 2*((n+forBlock-1)/forBlock)) > uint64(len(d.b)-start)) {
		d.fail("bad interval count %d for a record of %d bytes", n, len(d.b)-start)
	}
	first := unzigzag(d.uvarint())
	b0, b1 := d.byte(), d.byte()
	domain, contiguous, pred := int(b0&31), b0&(1<<5) != 0, int(b0>>6)
	sumDec, sqDec, parity := b1&1 != 0, b1&2 != 0, b1&4 != 0
	var scale int
	var excFlags byte
	unit := uint64(1)
	if b1&16 != 0 {
		if unit = d.uvarint(); d.err == nil && (unit < 2 || unit > maxUnit) {
			d.fail("bad unit %d", unit)
		}
	}
	if sqDec && n >= minScaled {
		scale = int(d.byte())
	}
	if b1&8 != 0 {
		if excFlags = d.byte(); d.err == nil && (excFlags == 0 || excFlags >= 1<<numFloats) {
			d.fail("bad exception flags %#x", excFlags)
		}
	}
	mbits := uint16(0xffff) & (colVarint * 0x5555) // every column colVarint
	if n > maxImplicitModes {
		mbits = uint16(d.byte()) | uint16(d.byte())<<8
	}
	if d.err != nil {
		return dst
	}
	switch {
	case b1 >= 32:
		d.fail("reserved flags %#x set", b1)
	case unit > 1 && !(domain <= maxDigits):
		d.fail("a unit in the ordered domain")
	case scale > maxSqScale:
		d.fail("sum of squares scale %d", scale)
	case parity && !sqDec:
		d.fail("parity of a sum of squares not decimal")
	case domain > maxDigits && domain != domainOrdered:
		d.fail("bad value domain %d", domain)
	case pred >= numPreds:
		d.fail("bad sum predictor %d", pred)
	case sumDec && domain == domainOrdered, sqDec && (!sumDec || 2*domain > maxDigits):
		d.fail("bad sum domains %#x for value domain %d", b1&3, domain)
	case excFlags != 0 && domain == domainOrdered && excFlags&(1<<fSum|1<<fSq) != excFlags:
		d.fail("exceptions in the ordered domain")
	case excFlags&(1<<fSum) != 0 && !sumDec, excFlags&(1<<fSq) != 0 && !sqDec:
		d.fail("exceptions of a sum not decimal")
	}
	if d.err != nil {
		return dst
	}
	sc := scratchPool.Get().(*metricsScratch)
	defer scratchPool.Put(sc)
	// Gaps are decoded whole (their blocks are offset by one interval);
	// the other columns are located, then decoded a block at a time
	// into buffers that stay in the L1 cache.
	var gaps []int64
	if !contiguous {
		gaps = growInts(&sc.gaps, int(n-1))
		r := d.locateCol(int(n-1), int(mbits&3))
		for i := 0; i < len(gaps) && d.err == nil; i += forBlock {
			r.next(gaps[i:min(i+forBlock, len(gaps))])
		}
	}
	var rd [numCols]colReader
	for c := colCount; c < numCols; c++ {
		rd[c] = d.locateCol(int(n), int(mbits>>(2*c)&3))
	}
	next := int(n) // the next interval with an exception
	for f := range sc.exc {
		sc.exc[f] = sc.exc[f][:0]
		if excFlags&(1<<f) == 0 {
			continue
		}
		cnt := d.uvarint()
		if d.err == nil && (cnt == 0 || cnt > n) {
			d.fail("%d exceptions of %d intervals", cnt, n)
		}
		i := -1
		for j := uint64(0); j < cnt && d.err == nil; j++ {
			gap := d.uvarint()
			if d.err == nil && gap >= n-uint64(i+1) {
				d.fail("exception past the last interval")
			}
			i += int(gap) + 1
			b := d.take(8)
			if d.err == nil {
				sc.exc[f] = append(sc.exc[f], excEntry{i: i, bits: binary.LittleEndian.Uint64(b)})
			}
		}
		if len(sc.exc[f]) > 0 {
			next = min(next, sc.exc[f][0].i)
		}
	}
	if d.err != nil {
		return dst
	}

	out := dst
	dst = growMetrics(dst, int(n))
	ms := dst[len(out):]
	var ex [numFloats]int // per float field, its next exception
	var buf [numCols][forBlock]int64
	u := int64(unit)
	iv, prevL := base+first, int64(0)
	lastCnt, inv := uint64(0), 0.0 // 1/lastCnt for sqPred
	for i0 := 0; i0 < len(ms); i0 += forBlock {
		blk := ms[i0:min(i0+forBlock, len(ms))]
		for c := colCount; c < numCols; c++ {
			rd[c].next(buf[c][:len(blk)])
		}
		if next >= i0+len(blk) && gaps == nil && sumDec && sqDec {
			// The common case, without exceptions or gaps, in one pass.
			iv, prevL, lastCnt, inv = decodeDecimalBlock(blk, &buf, i0 > 0, iv, prevL, lastCnt, inv, domain, pred, scale, parity, u)
			continue
		}
		for j := range blk {
			i := i0 + j
			if i > 0 {
				iv++
				if gaps != nil {
					iv += gaps[i-1]
				}
			}
			cnt := uint64(buf[colCount][j])
			v := [4]int64{prevL + buf[colFirst][j]}
			v[1] = v[0] + buf[colLast][j]
			v[2] = min(v[0], v[1]) - buf[colMin][j]
			v[3] = max(v[0], v[1]) + buf[colMax][j]
			prevL = v[1]
			m := &blk[j]
			*m = IntervalMetrics{Interval: iv, Count: cnt}
			if domain == domainOrdered {
				m.First, m.Last, m.Min, m.Max = fromOrdered(v[0]), fromOrdered(v[1]), fromOrdered(v[2]), fromOrdered(v[3])
			} else {
				m.First, m.Last, m.Min, m.Max = toDecimal(v[0]*u, domain), toDecimal(v[1]*u, domain), toDecimal(v[2]*u, domain), toDecimal(v[3]*u, domain)
			}
			if i == next {
				patch(sc, ex[:], m, i, fFirst, fMax)
			}
			if cnt != lastCnt {
				lastCnt, inv = cnt, 1/float64(cnt)
			}
			var s int64
			if sumDec {
				s = sumPredDec(pred, int64(cnt), &v) + buf[colSum][j]
				m.Sum = toDecimal(s*u, domain)
			} else {
				m.Sum = fromOrdered(ordered(sumPredFloat(pred, m)) + buf[colSum][j])
			}
			if sqDec {
				m.SumSq = toDecimal(sqFromResidual(buf[colSq][j], s, cnt, inv, &v, scale, parity)*u*u, 2*domain)
			} else {
				if i == next {
					patch(sc, ex[:], m, i, fSum, fSum)
				}
				m.SumSq = fromOrdered(ordered(sqPredFloat(m.Sum, cnt)) + buf[colSq][j])
			}
			if i == next {
				patch(sc, ex[:], m, i, fSum, fSq)
				next = int(n)
				for f := range sc.exc {
					if ex[f] < len(sc.exc[f]) {
						next = min(next, sc.exc[f][ex[f]].i)
					}
				}
			}
		}
	}
	return dst
}

// decodeDecimalBlock decodes the intervals of blk, none of which has an
// exception, from columns buf of a contiguous series whose fields are all
// decimal: decodeRecord's loop without its branches. It returns the
// running state (last interval, last last value, last count, 1/count).
func decodeDecimalBlock(blk []IntervalMetrics, buf *[numCols][forBlock]int64, after bool, iv, prevL int64, lastCnt uint64, inv float64,
	domain, pred, scale int, parity bool, u int64) (int64, int64, uint64, float64) {
	if !after {
		iv-- // the first interval is iv itself
	}
	counts, firsts, lasts := buf[colCount][:len(blk)], buf[colFirst][:len(blk)], buf[colLast][:len(blk)]
	mins, maxs, sums, sqs := buf[colMin][:len(blk)], buf[colMax][:len(blk)], buf[colSum][:len(blk)], buf[colSq][:len(blk)]
	uu := u * u
	for j := range blk {
		iv++
		cnt := uint64(counts[j])
		v := [4]int64{prevL + firsts[j]}
		v[1] = v[0] + lasts[j]
		v[2] = min(v[0], v[1]) - mins[j]
		v[3] = max(v[0], v[1]) + maxs[j]
		prevL = v[1]
		if cnt != lastCnt {
			lastCnt, inv = cnt, 1/float64(cnt)
		}
		s := sumPredDec(pred, int64(cnt), &v) + sums[j]
		q := sqFromResidual(sqs[j], s, cnt, inv, &v, scale, parity)
		blk[j] = IntervalMetrics{Interval: iv, Count: cnt,
			First: toDecimal(v[0]*u, domain), Last: toDecimal(v[1]*u, domain),
			Min: toDecimal(v[2]*u, domain), Max: toDecimal(v[3]*u, domain),
			Sum: toDecimal(s*u, domain), SumSq: toDecimal(q*uu, 2*domain)}
	}
	return iv, prevL, lastCnt, inv
}

func growInts(p *[]int64, n int) []int64 {
	if cap(*p) < n {
		*p = make([]int64, n)
	}
	*p = (*p)[:n]
	return *p
}

// patch sets the float fields lo…hi of m, interval i, that are
// exceptions, and moves their cursors ex past i.
func patch(sc *metricsScratch, ex []int, m *IntervalMetrics, i, lo, hi int) {
	for f := lo; f <= hi; f++ {
		if ex[f] < len(sc.exc[f]) && sc.exc[f][ex[f]].i == i {
			setFloatField(m, f, math.Float64frombits(sc.exc[f][ex[f]].bits))
			ex[f]++
		}
	}
}

func growMetrics(dst []IntervalMetrics, n int) []IntervalMetrics {
	if cap(dst)-len(dst) < n {
		out := make([]IntervalMetrics, len(dst), len(dst)+n)
		copy(out, dst)
		dst = out
	}
	return dst[:len(dst)+n]
}
