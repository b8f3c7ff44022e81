package block

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/aerie-db/aerie/internal/encoding"
	"github.com/aerie-db/aerie/internal/invariants"
)

// Value columns of data versions 2 and 3 (index versions 3 and 4;
// docs/format/block.md, "Value columns"): a column is cut into chunks of
// ChunkRows rows, each coded on its own as the smallest of constant,
// decimal mantissas (plain, delta or delta of delta; bit-packed, or
// exp-Golomb or, from data version 3, Rice codes) and XOR, so that
// exact-tick integer or decimal data cost a few bits a sample and decode
// a word at a time. "Version 3 column" below means a chunked column (index
// version 3 or 4).

// ChunkRows is the number of rows of a chunk of a version 3 value column;
// the last chunk of a column may be shorter. Persisted.
const ChunkRows = 256

// tupleRows is the number of rows a version 3 column serves per
// seriesiter tuple (seriesiter.MaxRows); ChunkRows is a multiple of it.
const tupleRows = 32

// xorPiece is the most values of an XOR chunk coded as one bit stream.
const xorPiece = 128

// Chunk header: kind in bits 0–2, presence coding in bits 3–4. Persisted.
const (
	chunkEmpty   = 0 // no row present: no presence, no payload
	chunkConst   = 1 // every present row holds the same bits
	chunkDecimal = 2 // decimal mantissas
	chunkXOR     = 3 // XOR value coding (encoding.AppendXORValues)
	chunkKinds   = 4

	chunkBitmap = 1 << 3 // presence: a bitmap of the chunk's rows
	chunkRuns   = 1 << 4 // presence: alternating run lengths, absent first
)

// Decimal modes: the stream s that is stored for mantissas x. Persisted.
const (
	decPlain  = 0 // s_i = x_i
	decDelta  = 1 // s_0 = x_0, s_i = x_i − x_{i−1}
	decDelta2 = 2 // s_0 = x_0, s_1 = x_1 − x_0, s_i = x_i − 2x_{i−1} + x_{i−2}
	decModes  = 3

	// decGolomb, in the digits-and-mode byte, marks quotients stored as
	// exp-Golomb codes of their zigzag form (order in the next byte)
	// rather than in frame-of-reference blocks.
	decGolomb = 1 << 7
	// maxGolombOrder is the largest exp-Golomb order; maxGolombBits the
	// longest code, so that a code always lies in one 57-bit window.
	maxGolombOrder = 32
	maxGolombBits  = 57
	// golombRice, in the order byte (data version 3), marks Golomb–Rice
	// codes instead of exp-Golomb codes: for u at order k, q = u >> k
	// zeros, a one, then u's k low bits, with q < riceMaxQ, so that a code
	// is at most riceMaxQ + maxGolombOrder = 57 bits too. Rice codes suit
	// light-tailed quotients (a random walk's steps) better than
	// exp-Golomb codes, which suit heavy tails.
	golombRice = 1 << 6
	riceMaxQ   = 25
)

// chunkMeta is what the index holds of a version 3 column: whether some
// row is absent, and where each chunk ends.
type chunkMeta struct {
	sparse bool
	ends   []uint32 // ends[i]: end of chunk i, from the column's start
}

// columnFlagSparse marks a version 3 column in which some row is absent.
const columnFlagSparse = 1

// numChunks is ⌈rows / ChunkRows⌉.
func numChunks(rows int) int { return (rows + ChunkRows - 1) / ChunkRows }

// dataLen is the column's length in bytes.
func (m *chunkMeta) dataLen() int64 {
	if len(m.ends) == 0 {
		return 0
	}
	return int64(m.ends[len(m.ends)-1])
}

// chunkRange returns the byte range of chunks c0 through c1 inclusive.
func (m *chunkMeta) chunkRange(c0, c1 int) (off, end int64) {
	if c0 > 0 {
		off = int64(m.ends[c0-1])
	}
	return off, int64(m.ends[c1])
}

// appendChunkMeta appends m: flags <1b>, then each chunk's length
// <uvarint>.
func appendChunkMeta(dst []byte, m *chunkMeta) []byte {
	flags := byte(0)
	if m.sparse {
		flags |= columnFlagSparse
	}
	dst = append(dst, flags)
	prev := uint32(0)
	for _, e := range m.ends {
		dst = binary.AppendUvarint(dst, uint64(e-prev))
		prev = e
	}
	return dst
}

// chunkMeta decodes the meta of a version 3 column of rows rows; its
// chunk ends take the first numChunks(rows) entries of *arena when it has
// them (a group's columns share one allocation), else (or with a nil
// arena) their own.
func (d *decbuf) chunkMeta(rows int, arena *[]uint32) chunkMeta {
	var m chunkMeta
	f := d.byte()
	if d.err == nil && f&^columnFlagSparse != 0 {
		d.fail("column flags %#x", f)
	}
	m.sparse = f&columnFlagSparse != 0
	n := numChunks(rows)
	if d.err != nil || n > len(d.b)-d.pos {
		d.fail("%d chunk lengths do not fit", n)
		return m
	}
	if arena != nil && len(*arena) >= n {
		m.ends, *arena = (*arena)[:n:n], (*arena)[n:]
	} else {
		m.ends = make([]uint32, n)
	}
	end := uint64(0)
	for i := range n {
		l := d.uvarint()
		if d.err == nil && (l == 0 || l > math.MaxUint32-end) {
			d.fail("chunk %d length %d", i, l)
		}
		end += l
		m.ends[i] = uint32(end)
	}
	return m
}

// valueEncoder codes version 3 columns; its buffers are reused.
type valueEncoder struct {
	rice  bool      // may write Rice codes (data version 3)
	vals  []float64 // the chunk's present values
	xs    [ChunkRows]int64
	s     [ChunkRows]int64
	trial []byte
	best  []byte
}

// appendColumn appends the chunks of one column (vals and present are
// its rows; present nil: every row) to dst and returns its meta.
func (e *valueEncoder) appendColumn(dst []byte, vals []float64, present []bool) ([]byte, chunkMeta) {
	m := chunkMeta{ends: make([]uint32, 0, numChunks(len(vals)))}
	start := len(dst)
	for i := 0; i < len(vals); i += ChunkRows {
		j := min(i+ChunkRows, len(vals))
		var p []bool
		if present != nil {
			p = present[i:j]
		}
		dst = e.appendChunk(dst, vals[i:j], p)
		m.ends = append(m.ends, uint32(len(dst)-start))
	}
	for _, p := range present {
		if !p {
			m.sparse = true
			break
		}
	}
	return dst, m
}

// appendChunk appends one chunk of at most ChunkRows rows.
func (e *valueEncoder) appendChunk(dst []byte, vals []float64, present []bool) []byte {
	e.vals = e.vals[:0]
	for i, v := range vals {
		if present == nil || present[i] {
			e.vals = append(e.vals, v)
		}
	}
	if len(e.vals) == 0 {
		return append(dst, chunkEmpty)
	}
	hdr := len(dst)
	dst = append(dst, 0)
	var pres byte
	if len(e.vals) < len(vals) {
		dst, pres = appendPresence(dst, present)
	}
	kind, payload := e.payload()
	dst[hdr] = kind | pres
	return append(dst, payload...)
}

// appendPresence appends the smaller of a bitmap and a run list of the
// present rows, and returns which it is.
func appendPresence(dst []byte, present []bool) ([]byte, byte) {
	var runs [ChunkRows + 1]uint16
	n, cur := 0, false
	for _, p := range present {
		if p != cur {
			n++
			cur = p
		}
		runs[n]++
	}
	runsLen := uvarintLen(uint64(n + 1))
	for _, r := range runs[:n+1] {
		runsLen += uvarintLen(uint64(r))
	}
	bmLen := (len(present) + 7) / 8
	if runsLen < bmLen {
		dst = binary.AppendUvarint(dst, uint64(n+1))
		for _, r := range runs[:n+1] {
			dst = binary.AppendUvarint(dst, uint64(r))
		}
		return dst, chunkRuns
	}
	start := len(dst)
	dst = append(dst, make([]byte, bmLen)...)
	for i, p := range present {
		if p {
			dst[start+i/8] |= 1 << (i % 8)
		}
	}
	return dst, chunkBitmap
}

// payload codes e.vals (at least one) as the smallest kind; the bytes
// are valid until the next call.
func (e *valueEncoder) payload() (byte, []byte) {
	vs := e.vals
	same := true
	b0 := math.Float64bits(vs[0])
	for _, v := range vs[1:] {
		if math.Float64bits(v) != b0 {
			same = false
			break
		}
	}
	if same {
		e.best = binary.LittleEndian.AppendUint64(e.best[:0], b0)
		return chunkConst, e.best
	}
	kind := byte(chunkXOR)
	e.best = e.best[:0]
	if k, ok := e.mantissas(); ok {
		kind = chunkDecimal
		best := e.planDecimal(0)
		for mode := 1; mode < decModes; mode++ {
			if p := e.planDecimal(mode); p.size < best.size {
				best = p
			}
		}
		e.best = e.appendDecimal(e.best[:0], k, best)
		if invariants.Enabled && len(e.best) != best.size {
			panic(fmt.Sprintf("block: decimal payload of %d bytes, planned %d", len(e.best), best.size))
		}
		if len(e.best) <= 2*len(vs) {
			return kind, e.best // at most 16 bits a value: XOR does not beat it
		}
	}
	e.trial = e.trial[:0]
	for i := 0; i < len(vs); i += xorPiece {
		ref := uint64(0)
		if i > 0 {
			ref = math.Float64bits(vs[i-1])
		}
		e.trial = encoding.AppendXORValues(e.trial, vs[i:min(i+xorPiece, len(vs))], ref)
	}
	if kind == chunkXOR || len(e.trial) < len(e.best) {
		return chunkXOR, e.trial
	}
	return kind, e.best
}

// mantissas finds the least k at which every value of e.vals is a decimal
// mantissa (mantissaAt) and stores them in e.xs.
func (e *valueEncoder) mantissas() (int, bool) {
	k := 0
	for _, v := range e.vals {
		if _, ok := mantissaAt(v, k); ok {
			continue
		}
		d := digitsOf(v)
		if d < 0 {
			return 0, false
		}
		k = max(k, d)
	}
	for i, v := range e.vals {
		m, ok := mantissaAt(v, k)
		if !ok {
			return 0, false
		}
		e.xs[i] = m
	}
	return k, true
}

// decPlan is how a decimal payload codes its quotients, and its size.
type decPlan struct {
	mode  int
	unit  uint64
	order int // -1: frame-of-reference blocks; else the order byte (golombRice for Rice codes)
	size  int // bytes of the whole payload
}

// stream fills e.s with the stream of e.xs[:n] in mode, divides the
// values past the first min(mode, n) by their greatest common divisor
// (at most maxUnit, else 1), and returns that unit.
func (e *valueEncoder) stream(n, mode int) uint64 {
	xs, s := e.xs[:n], e.s[:n]
	copy(s, xs)
	for range mode {
		for i := n - 1; i > 0; i-- {
			s[i] -= s[i-1]
		}
	}
	// After one pass s_i = x_i − x_{i−1} for i ≥ 1; the second pass leaves
	// s_1 alone only if it starts at i ≥ 2, so redo s_1 for decDelta2.
	if mode == decDelta2 && n > 1 {
		s[1] = xs[1] - xs[0]
	}
	h := min(mode, n)
	g := uint64(0)
	var d divisor
	for _, x := range s[h:] {
		u := absU(x)
		if g != 0 && d.divides(u) {
			continue // the common case once a unit is found: no division
		}
		if g = gcd(g, u); g == 1 {
			break
		}
		if g != 0 {
			d = newDivisor(g)
		}
	}
	if g == 0 || g > maxUnit {
		g = 1
	}
	if g > 1 {
		rest := s[h:]
		for i := range rest {
			rest[i] = d.quo(rest[i])
		}
	}
	return g
}

// divisor tests and performs exact division by g = o·2^t (o odd, g > 0)
// with shifts and multiplications: x is a multiple of g when its t low
// bits are zero and (x ≫ t)·o⁻¹ mod 2⁶⁴ is at most (2⁶⁴ − 1) / o (o⁻¹ the
// inverse of o modulo 2⁶⁴; Granlund and Montgomery), and a multiple's
// quotient is that product.
type divisor struct {
	t        uint
	inv, lim uint64
}

func newDivisor(g uint64) divisor {
	t := uint(bits.TrailingZeros64(g))
	o := g >> t
	inv := o // correct to 3 bits for odd o; each step doubles them
	for range 5 {
		inv *= 2 - o*inv
	}
	return divisor{t: t, inv: inv, lim: math.MaxUint64 / o}
}

func (d divisor) divides(u uint64) bool {
	return u&(1<<d.t-1) == 0 && (u>>d.t)*d.inv <= d.lim
}

// quo returns x / g for a multiple x of g (either sign).
func (d divisor) quo(x int64) int64 { return int64(uint64(x>>d.t) * d.inv) }

// planDecimal returns how mode codes e.xs[:len(e.vals)] at k digits
// (k's byte, the unit, the stream's first min(mode, n) values, then the
// quotients as the smallest of FOR blocks, exp-Golomb and Rice codes),
// leaving e.s holding mode's stream.
func (e *valueEncoder) planDecimal(mode int) decPlan {
	n := len(e.vals)
	p := decPlan{mode: mode, unit: e.stream(n, mode), order: -1}
	h := min(mode, n)
	s := e.s[:n]
	p.size = 1 + uvarintLen(p.unit)
	for _, x := range s[:h] {
		p.size += uvarintLen(zigzag(x))
	}
	rest := s[h:]
	order, bits := golombOrder(rest)
	if e.rice {
		if ro, rb := riceOrder(rest); ro >= 0 && (order < 0 || rb < bits) {
			order, bits = ro|golombRice, rb
		}
	}
	if fs := forSize(rest, false); order >= 0 && (bits+7)/8+1 < fs {
		p.order, p.size = order, p.size+(bits+7)/8+1
	} else {
		p.size += fs
	}
	return p
}

// appendDecimal appends the decimal payload of e.xs[:len(e.vals)] at k
// digits as p plans it: k | mode<<5 | golomb<<7 <1b>, unit <uvarint>,
// the stream's first min(mode, n) values <zigzag uvarint>, then the rest
// divided by unit in frame-of-reference blocks (appendFOR), or the order
// byte and exp-Golomb or Rice codes.
func (e *valueEncoder) appendDecimal(dst []byte, k int, p decPlan) []byte {
	n := len(e.vals)
	e.stream(n, p.mode)
	h := min(p.mode, n)
	s := e.s[:n]
	flag := 0
	if p.order >= 0 {
		flag = decGolomb
	}
	dst = append(dst, byte(k|p.mode<<5|flag))
	dst = binary.AppendUvarint(dst, p.unit)
	for _, x := range s[:h] {
		dst = binary.AppendUvarint(dst, zigzag(x))
	}
	rest := s[h:]
	switch {
	case p.order < 0:
		return appendFOR(dst, rest, false)
	case p.order&golombRice != 0:
		return appendRice(append(dst, byte(p.order)), rest, p.order&^golombRice)
	default:
		return appendGolomb(append(dst, byte(p.order)), rest, p.order)
	}
}

// golombBits is the length of the exp-Golomb code of order k of u.
func golombBits(u uint64, k int) int {
	q := u>>k + 1
	if q == 0 { // u = 2⁶⁴ − 1 at order 0
		return 2*64 + 1
	}
	return 2*(bits.Len64(q)-1) + 1 + k
}

// golombOrder returns the order whose exp-Golomb codes of xs' zigzag
// forms take the fewest bits, and that number; -1 when xs is empty or
// some value's code is longer than maxGolombBits at every order tried.
// A histogram of the values' bit lengths estimates every order's cost
// (a value of L bits costs about 2·max(L − k, 0) + 1 + k at order k); the
// orders next to the estimate's best are then counted exactly.
func golombOrder(xs []int64) (order, total int) {
	if len(xs) == 0 {
		return -1, 0
	}
	var hist [65]int
	maxL := 0
	for _, x := range xs {
		l := bits.Len64(zigzag(x))
		hist[l]++
		maxL = max(maxL, l)
	}
	// Orders past the longest value only add bits to every code.
	best, bestCost := 0, -1
	for k := 0; k <= min(maxGolombOrder, maxL); k++ {
		cost := len(xs) * (1 + k)
		for l := k + 1; l <= maxL; l++ {
			cost += hist[l] * 2 * (l - k)
		}
		if bestCost < 0 || cost < bestCost {
			best, bestCost = k, cost
		}
	}
	order = -1
	for k := max(0, best-1); k <= min(maxGolombOrder, best+1); k++ {
		n := 0
		for _, x := range xs {
			b := golombBits(zigzag(x), k)
			if b > maxGolombBits {
				n = -1
				break
			}
			n += b
		}
		if n >= 0 && (order < 0 || n < total) {
			order, total = k, n
		}
	}
	return order, total
}

// riceOrder returns the Rice order whose codes of xs' zigzag forms take
// the fewest bits, and that number; -1 when xs is empty or no order near
// the estimate codes every value in fewer than riceMaxQ unary bits. The
// estimate is the order at which the mean quotient is about one (for a
// geometric distribution the best order is near log2 of its mean); the
// orders around it are counted exactly.
func riceOrder(xs []int64) (order, total int) {
	if len(xs) == 0 {
		return -1, 0
	}
	var sum, mx uint64
	for _, x := range xs {
		u := zigzag(x)
		sum += min(u, 1<<40) // no overflow for ChunkRows values
		mx = max(mx, u)
	}
	est := max(bits.Len64(sum/uint64(len(xs))), bits.Len64(mx>>(riceMaxQ-1)))
	order = -1
	for k := max(0, est-2); k <= min(maxGolombOrder, est+1); k++ {
		if mx>>k >= riceMaxQ {
			continue
		}
		n := len(xs) * (1 + k)
		for _, x := range xs {
			n += int(zigzag(x) >> k)
		}
		if order < 0 || n < total {
			order, total = k, n
		}
	}
	return order, total
}

// lsbWriter appends a bit stream, least significant bit first.
type lsbWriter struct {
	dst []byte
	acc uint64
	nb  uint // bits in acc, < 32 between calls
}

// put appends the n ≤ 32 low bits of v.
func (w *lsbWriter) put(v uint64, n uint) {
	w.acc |= v << w.nb
	w.nb += n
	for w.nb >= 32 {
		w.dst = binary.LittleEndian.AppendUint32(w.dst, uint32(w.acc))
		w.acc >>= 32
		w.nb -= 32
	}
}

// flush zero-pads the stream to a byte and returns it.
func (w *lsbWriter) flush() []byte {
	for ; w.nb > 0; w.nb -= min(w.nb, 8) {
		w.dst = append(w.dst, byte(w.acc))
		w.acc >>= 8
	}
	return w.dst
}

// appendRice appends the Golomb–Rice codes of order k of xs' zigzag
// forms, least significant bit first, zero-padded to a byte: for u, q =
// u >> k zeros (q < riceMaxQ), a one, then u's k low bits.
func appendRice(dst []byte, xs []int64, k int) []byte {
	w := lsbWriter{dst: dst}
	for _, x := range xs {
		u := zigzag(x)
		q := uint(u >> k)
		w.put(1<<q, q+1) // q zeros, then the one
		if k > 0 {
			w.put(u&(1<<k-1), uint(k))
		}
	}
	return w.flush()
}

// appendGolomb appends the exp-Golomb codes of order k of xs' zigzag
// forms, least significant bit first, zero-padded to a byte: for u, with
// q = (u >> k) + 1 of n bits, n − 1 zeros and a one, then q's n − 1 low
// bits, then u's k low bits.
func appendGolomb(dst []byte, xs []int64, k int) []byte {
	w := lsbWriter{dst: dst}
	for _, x := range xs {
		u := zigzag(x)
		q := u>>k + 1
		n := uint(bits.Len64(q))
		w.put(1<<(n-1), n) // n − 1 zeros, then the one
		w.put(q&(1<<(n-1)-1), n-1)
		if k > 0 {
			w.put(u&(1<<k-1), uint(k))
		}
	}
	return w.flush()
}

func absU(x int64) uint64 {
	if x < 0 {
		return uint64(-x) // math.MinInt64 gives 1<<63, its magnitude
	}
	return uint64(x)
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// valueDecoder decodes chunks of version 3 columns; its arrays are
// reused. After decode, vals holds each row's value (0 if absent) and
// pres bit r%32 of word r/32 is set when row r is present.
type valueDecoder struct {
	rice bool // accepts Rice codes (data version 3)
	full bool // after decode: every row is present
	vals [ChunkRows]float64
	pres [ChunkRows / tupleRows]uint32
	xs   [ChunkRows]int64
}

// decode decodes the chunk src of rows rows (1 ≤ rows ≤ ChunkRows); at is
// src's offset in the data file, for errors (a *CorruptionError whose
// File the caller sets).
func (c *valueDecoder) decode(src []byte, rows int, at int64) error {
	d := &decbuf{b: src, what: "value chunk", at: int(at)}
	kind, m := c.presence(d, rows)
	if d.err != nil {
		return d.err
	}
	vs := c.vals[:m]
	switch kind {
	case chunkConst:
		b := d.take(8)
		if d.err != nil {
			return d.err
		}
		v := math.Float64frombits(binary.LittleEndian.Uint64(b))
		for i := range vs {
			vs[i] = v
		}
	case chunkDecimal:
		c.decimal(d, vs)
	case chunkXOR:
		ref := uint64(0)
		for i := 0; i < m && d.err == nil; i += xorPiece {
			j := min(i+xorPiece, m)
			n, err := encoding.DecodeXORValues(vs[i:j], d.b[d.pos:], ref)
			if err != nil {
				var de *encoding.DecodeError
				if errors.As(err, &de) {
					d.pos += de.Offset
				}
				d.fail("%w", err)
				break
			}
			d.pos += n
			ref = math.Float64bits(vs[j-1])
		}
	}
	if d.err == nil && d.pos != len(d.b) {
		d.fail("%d trailing bytes", len(d.b)-d.pos)
	}
	if d.err != nil {
		return d.err
	}
	if m < rows {
		c.scatter(m, rows)
	}
	return nil
}

// presence reads the header and the presence of a chunk of rows rows
// from d into c.pres and c.full, and returns the chunk's kind and how many
// rows are present; d is left at the payload, or with its error set.
func (c *valueDecoder) presence(d *decbuf, rows int) (kind byte, m int) {
	h := d.byte()
	kind, pcode := h&7, h&(chunkBitmap|chunkRuns)
	switch {
	case d.err != nil:
		return 0, 0
	case kind >= chunkKinds || h&^(7|chunkBitmap|chunkRuns) != 0 || pcode == chunkBitmap|chunkRuns:
		d.pos--
		d.fail("header %#x", h)
		return 0, 0
	case kind == chunkEmpty && pcode != 0:
		d.pos--
		d.fail("empty chunk with presence")
		return 0, 0
	}
	clear(c.pres[:])
	m = rows
	c.full = pcode == 0 && kind != chunkEmpty
	switch pcode {
	case 0:
		if kind == chunkEmpty {
			m = 0
			break
		}
		for r := 0; r < rows; r += tupleRows {
			c.pres[r/tupleRows] = uint32(uint64(1)<<min(tupleRows, rows-r) - 1)
		}
	case chunkBitmap:
		m = c.bitmap(d, rows)
	case chunkRuns:
		m = c.runs(d, rows)
	}
	if d.err != nil {
		return 0, 0
	}
	if kind != chunkEmpty && (m == 0 || m == rows && pcode != 0) {
		d.fail("%d of %d rows present with presence coded", m, rows)
		return 0, 0
	}
	return kind, m
}

// presentIn returns how many of the rows [a, b) of the chunk last read
// by presence are present, and the first of them (−1: none).
func (c *valueDecoder) presentIn(a, b int) (n, first int) {
	first = -1
	for w := a / tupleRows; w*tupleRows < b; w++ {
		bitsW := c.pres[w]
		if lo := a - w*tupleRows; lo > 0 {
			bitsW &^= 1<<lo - 1
		}
		if hi := b - w*tupleRows; hi < tupleRows {
			bitsW &= 1<<hi - 1
		}
		if bitsW != 0 && first < 0 {
			first = w*tupleRows + bits.TrailingZeros32(bitsW)
		}
		n += bits.OnesCount32(bitsW)
	}
	return n, first
}

// bitmap reads a presence bitmap of rows rows and returns how many are set.
func (c *valueDecoder) bitmap(d *decbuf, rows int) int {
	bm := d.take((rows + 7) / 8)
	if d.err != nil {
		return 0
	}
	m := 0
	for i, b := range bm {
		if i == len(bm)-1 && rows%8 != 0 && b>>(rows%8) != 0 {
			d.fail("presence bits past the last row")
			return 0
		}
		c.pres[i/4] |= uint32(b) << (8 * (i % 4))
		m += bits.OnesCount8(b)
	}
	return m
}

// runs reads a presence run list of rows rows and returns how many are
// present.
func (c *valueDecoder) runs(d *decbuf, rows int) int {
	n := d.count(1)
	r, m := 0, 0
	for i := 0; i < n && d.err == nil; i++ {
		l := d.uvarint()
		if d.err == nil && l > uint64(rows-r) {
			d.fail("runs exceed %d rows", rows)
		}
		if d.err != nil {
			return 0
		}
		if i%2 == 1 {
			for j := r; j < r+int(l); j++ {
				c.pres[j/tupleRows] |= 1 << (j % tupleRows)
			}
			m += int(l)
		}
		r += int(l)
	}
	if d.err == nil && r != rows {
		d.fail("runs cover %d of %d rows", r, rows)
	}
	return m
}

// decimal reads a decimal payload of len(vs) values into vs.
func (c *valueDecoder) decimal(d *decbuf, vs []float64) {
	b := d.byte()
	k, mode := int(b&31), int(b>>5&3)
	if d.err == nil && (k > maxDigits || mode >= decModes) {
		d.pos--
		d.fail("decimal digits %d, mode %d", k, mode)
	}
	unit := d.uvarint()
	if d.err == nil && (unit == 0 || unit > maxUnit) {
		d.fail("unit %d", unit)
	}
	if d.err != nil {
		return
	}
	n := len(vs)
	xs := c.xs[:n]
	h := min(mode, n)
	for i := range h {
		xs[i] = d.varint()
	}
	if b&decGolomb != 0 {
		readGolomb(d, xs[h:], c.rice)
	}
	lo := int64(0)
	for i := h; i < n && d.err == nil && b&decGolomb == 0; i += forBlock {
		blk := xs[i:min(i+forBlock, n)]
		w := d.byte()
		if d.err == nil && w > 64 {
			d.pos--
			d.fail("bit width %d", w)
		}
		lo += d.varint()
		src := d.take((len(blk)*int(w) + 7) / 8)
		if d.err != nil {
			return
		}
		unpack(blk, src, lo, uint(w))
	}
	if d.err != nil {
		return
	}
	// The unit, then in one pass the sums of the differences (in a
	// register, not through memory) and the division by 10^k, which is
	// the exactly rounded value of the k-digit decimal.
	u, p := int64(unit), pow10[k]
	for i := h; i < n && u > 1; i++ {
		xs[i] *= u
	}
	if n == 0 {
		return
	}
	switch mode {
	case decDelta:
		x := xs[0]
		vs[0] = toFloat(x, k, p)
		for i := 1; i < n; i++ {
			x += xs[i]
			vs[i] = toFloat(x, k, p)
		}
		return
	case decDelta2:
		x := xs[0]
		vs[0] = toFloat(x, k, p)
		if n == 1 {
			return
		}
		d1 := xs[1]
		x += d1
		vs[1] = toFloat(x, k, p)
		for i := 2; i < n; i++ {
			d1 += xs[i]
			x += d1
			vs[i] = toFloat(x, k, p)
		}
		return
	}
	for i, x := range xs {
		vs[i] = toFloat(x, k, p)
	}
}

// toFloat is the decimal x·10^−k; p is 10^k.
func toFloat(x int64, k int, p float64) float64 {
	if k == 0 {
		return float64(x)
	}
	return float64(x) / p
}

// readGolomb reads the order and the exp-Golomb or (rice: data version 3
// on) Rice codes of xs (at least one) from the rest of d, which they must
// fill to its last byte.
func readGolomb(d *decbuf, xs []int64, riceOK bool) {
	order := d.byte()
	rice := order&golombRice != 0 && riceOK
	if rice {
		order &^= golombRice
	}
	if d.err == nil && (order > maxGolombOrder || len(xs) == 0) {
		d.pos--
		d.fail("exp-Golomb order %d of %d values", order, len(xs))
	}
	if d.err != nil {
		return
	}
	k := uint(order)
	src := d.b[d.pos:]
	if cap(src)-len(src) < 8 {
		var pad [ChunkRows*maxGolombBits/8 + 16]byte
		if len(src) > len(pad)-8 {
			d.fail("exp-Golomb stream of %d bytes", len(src))
			return
		}
		copy(pad[:], src)
		src = pad[:len(src)]
	}
	end := uint(len(src)) * 8
	src = src[:len(src)+8]
	p, i := uint(0), 0
	if rice {
		i, p = readRice(src, xs, k, end)
	}
	for ; i < len(xs); i++ {
		if p >= end {
			d.fail("exp-Golomb stream ends at value %d of %d", i, len(xs))
			return
		}
		w := binary.LittleEndian.Uint64(src[p>>3:]) >> (p & 7) // 57 bits at least
		z := uint(bits.TrailingZeros64(w))
		if rice {
			n := z + 1 + k
			if z >= riceMaxQ || p+n > end {
				d.pos += int(p >> 3)
				d.fail("Rice code of %d bits at value %d", n, i)
				return
			}
			xs[i] = unzigzag(uint64(z)<<k | w>>(z+1)&(1<<k-1))
			p += n
			continue
		}
		n := 2*z + 1 + k
		if n > maxGolombBits || p+n > end {
			d.pos += int(p >> 3)
			d.fail("exp-Golomb code of %d bits at value %d", n, i)
			return
		}
		q := w>>(z+1)&(1<<z-1) | 1<<z
		u := (q-1)<<k | w>>(2*z+1)&(1<<k-1)
		xs[i] = unzigzag(u)
		p += n
	}
	if (end-p) >= 8 || (end > p && src[end/8-1]>>(8-(end-p)) != 0) {
		d.pos += int(p >> 3)
		d.fail("exp-Golomb stream: %d bits after its last code", end-p)
		return
	}
	d.pos = len(d.b)
}

// readRice decodes the Rice codes of order k from the start of src (end
// bits long, then at least 8 bytes that may be read) into xs while each
// code is whole within end, and returns how many it decoded and the bits
// they took; readGolomb goes on from there, and reports whatever stopped
// it. The codes are read from a 64-bit buffer refilled (one unaligned
// load) when it holds fewer than 32 bits or less than the next code, so
// a value costs no load of its own; a code longer than 56 bits (order 32,
// quotient 24) ends it. Orders up to riceTableMaxK decode the codes
// whole within the buffer's next riceTableBits bits with one lookup
// (riceTables), up to riceTableCodes of them.
func readRice(src []byte, xs []int64, k, end uint) (int, uint) {
	var (
		acc    uint64 // the next bits, first in the least significant
		nb     uint   // bits in acc
		pos, p uint   // bytes loaded into acc; bits decoded
		tab    *[1 << riceTableBits]uint64
	)
	if k <= riceTableMaxK {
		tab = &riceTables[k]
	}
	lim := uint(len(src)) - 8
	for i := 0; i < len(xs); {
		if nb < 32 {
			if pos > lim {
				return i, p
			}
			acc |= binary.LittleEndian.Uint64(src[pos:]) << nb
			pos += (63 - nb) >> 3
			nb |= 56
		}
		if tab != nil && i+riceTableCodes <= len(xs) && p+riceTableBits <= end {
			// Every code the entry holds lies in the window, so within
			// end; their values are written whole, the count kept.
			if e := tab[acc&(1<<riceTableBits-1)]; e>>48&15 != 0 {
				x := xs[i : i+riceTableCodes : i+riceTableCodes]
				x[0], x[1], x[2] = int64(int8(e)), int64(int8(e>>8)), int64(int8(e>>16))
				x[3], x[4], x[5] = int64(int8(e>>24)), int64(int8(e>>32)), int64(int8(e>>40))
				b := uint(e >> 52)
				i += int(e >> 48 & 15)
				acc >>= b
				nb -= b
				p += b
				continue
			}
		}
		z := uint(bits.TrailingZeros64(acc))
		n := z + 1 + k
		if n > nb {
			if pos > lim {
				return i, p
			}
			acc |= binary.LittleEndian.Uint64(src[pos:]) << nb
			pos += (63 - nb) >> 3
			nb |= 56
			z = uint(bits.TrailingZeros64(acc))
			n = z + 1 + k
		}
		if z >= riceMaxQ || n > nb || p+n > end {
			return i, p
		}
		xs[i] = unzigzag(uint64(z)<<k | acc>>(z+1)&(1<<k-1))
		acc >>= n
		nb -= n
		p += n
		i++
	}
	return len(xs), p
}

// The Rice lookup tables: for orders 0 … riceTableMaxK, entry w of
// riceTables[k] holds the codes that lie whole in the riceTableBits bits
// w (first in the least significant), up to riceTableCodes of them: their
// values as int8 in bytes 0–5 (every such value fits: a quotient below
// riceTableBits, a remainder of at most 4 bits), their count in bits
// 48–51 and the bits they take in bits 52–55; count 0 when the first code
// is longer.
const (
	riceTableBits  = 10
	riceTableMaxK  = 4
	riceTableCodes = 6
)

var riceTables = func() (t [riceTableMaxK + 1][1 << riceTableBits]uint64) {
	for k := range uint(riceTableMaxK + 1) {
		for w := range uint64(1 << riceTableBits) {
			var e uint64
			c, pos := 0, uint(0)
			for c < riceTableCodes {
				rest := w >> pos
				z := uint(bits.TrailingZeros64(rest)) // 64 when rest is 0
				n := z + 1 + k
				if rest == 0 || pos+n > riceTableBits {
					break
				}
				v := unzigzag(uint64(z)<<k | rest>>(z+1)&(1<<k-1))
				e |= uint64(uint8(int8(v))) << (8 * c)
				c++
				pos += n
			}
			t[k][w] = e | uint64(c)<<48 | uint64(pos)<<52
		}
	}
	return t
}()

// scatter moves the m present values of vals[:m] to their rows, last
// first (value i moves to a row ≥ i), and zeroes absent rows.
func (c *valueDecoder) scatter(m, rows int) {
	for r := rows - 1; r >= 0; r-- {
		if c.pres[r/tupleRows]>>(r%tupleRows)&1 == 1 {
			m--
			c.vals[r] = c.vals[m]
		} else {
			c.vals[r] = 0
		}
	}
}

// decodeColumn decodes a whole version 3 column of rows rows from its
// data: each row's value (0 if absent) and presence.
func decodeColumn(m *chunkMeta, data []byte, rows int) ([]float64, []bool, error) {
	dec := valueDecoder{rice: true}
	return dec.appendColumn(make([]float64, 0, rows), make([]bool, 0, rows), m, data, rows)
}

// appendColumn appends the rows of a version 3 column to vals and pres.
func (dec *valueDecoder) appendColumn(vals []float64, pres []bool, m *chunkMeta, data []byte, rows int) ([]float64, []bool, error) {
	if len(m.ends) != numChunks(rows) || int64(len(data)) < m.dataLen() {
		return vals, pres, &CorruptionError{Err: errors.New("value column: meta does not match its data")}
	}
	for ci := range m.ends {
		off, end := m.chunkRange(ci, ci)
		n := min(ChunkRows, rows-ci*ChunkRows)
		if err := dec.decode(data[off:end], n, off); err != nil {
			return vals, pres, err
		}
		vals = append(vals, dec.vals[:n]...)
		for r := range n {
			pres = append(pres, dec.pres[r/tupleRows]>>(r%tupleRows)&1 == 1)
		}
	}
	return vals, pres, nil
}

// ColumnCodec encodes and decodes value columns of the current data
// version outside a block file, for benchmarks and tools. It is not safe
// for concurrent use.
type ColumnCodec struct {
	enc valueEncoder
	dec valueDecoder
}

// NewColumnCodec returns a codec of data version DataVersion.
func NewColumnCodec() *ColumnCodec {
	return &ColumnCodec{enc: valueEncoder{rice: true}, dec: valueDecoder{rice: true}}
}

// Append appends a column of len(vals) rows (present nil: every row) to
// data and the meta that the block's index would hold to meta.
func (c *ColumnCodec) Append(data, meta []byte, vals []float64, present []bool) ([]byte, []byte) {
	data, m := c.enc.appendColumn(data, vals, present)
	return data, appendChunkMeta(meta, &m)
}

// Decode appends the rows of a column of rows rows that Append wrote
// (meta and data) to vals and pres: each row's value, 0 if absent.
func (c *ColumnCodec) Decode(vals []float64, pres []bool, meta, data []byte, rows int) ([]float64, []bool, error) {
	d := &decbuf{b: meta, what: "column meta"}
	m := d.chunkMeta(rows, nil)
	if d.err == nil && d.pos != len(meta) {
		d.fail("%d trailing bytes", len(meta)-d.pos)
	}
	if d.err != nil {
		return vals, pres, d.err
	}
	return c.dec.appendColumn(vals, pres, &m, data, rows)
}
