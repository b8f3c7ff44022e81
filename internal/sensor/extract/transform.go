package extract

import "math"

// chain applies a Func's transformations in order. Every stage passes a NaN
// through unchanged (bit for bit, so stale markers stay stale markers) and
// without touching its state.
type chain []stage

func newChain(steps []step) chain {
	if len(steps) == 0 {
		return nil
	}
	c := make(chain, len(steps))
	for i, s := range steps {
		c[i] = stage{step: s}
	}
	return c
}

// apply transforms v, or reports false if a stage emits nothing (diff on
// its first value).
func (c chain) apply(v float64) (float64, bool) {
	for i := range c {
		if math.IsNaN(v) {
			return v, true
		}
		var ok bool
		if v, ok = c[i].apply(v); !ok {
			return 0, false
		}
	}
	return v, true
}

// stage is one transformation with its state.
type stage struct {
	step
	prev    float64 // diff: last value; cumsum: running sum
	started bool    // diff: prev is set
	avg     movavg
}

func (s *stage) apply(v float64) (float64, bool) {
	switch s.kind {
	case stepAbs:
		return math.Abs(v), true
	case stepSub:
		return v - s.k, true
	case stepMul:
		return v * s.k, true
	case stepCumsum:
		s.prev += v
		return s.prev, true
	case stepDiff:
		d := v - s.prev
		s.prev = v
		if !s.started {
			s.started = true
			return 0, false
		}
		return d, true
	case stepMovavg:
		return s.avg.push(v, s.n), true
	}
	panic("extract: invalid transformation")
}

// movavg is the mean of the last n values: a ring of at most n values (it
// grows with the values seen, so a short series costs little) and their
// sum. The sum is kept scaled by 2^-movavgShift, which is exact and keeps
// it below MaxFloat64 for up to MaxMovavg finite values, and with Neumaier
// compensation; it is recomputed from the ring every n values so rounding
// cannot drift over a long series. Infinities are counted apart, so one in
// the window makes the mean ±Inf (NaN if both signs are there) and leaves
// the finite sum usable once it leaves.
type movavg struct {
	ring           []float64
	next           int // ring index the next value goes to once full
	sum, comp      float64
	posInf, negInf int
	sinceRecompute int
}

// movavgShift scales values by 2^-17 < 1/MaxMovavg before summing.
const movavgShift = 17

func (m *movavg) push(v float64, n int) float64 {
	if len(m.ring) < n {
		m.ring = append(m.ring, v)
	} else {
		m.add(m.ring[m.next], -1)
		m.ring[m.next] = v
		m.next = (m.next + 1) % n
	}
	m.add(v, 1)
	if m.sinceRecompute++; m.sinceRecompute >= n {
		m.recompute()
	}
	switch {
	case m.posInf > 0 && m.negInf > 0:
		return math.NaN()
	case m.posInf > 0:
		return math.Inf(1)
	case m.negInf > 0:
		return math.Inf(-1)
	}
	return math.Ldexp((m.sum+m.comp)/float64(len(m.ring)), movavgShift)
}

// add adds sign·v to the window's sum.
func (m *movavg) add(v float64, sign int) {
	switch {
	case math.IsInf(v, 1):
		m.posInf += sign
	case math.IsInf(v, -1):
		m.negInf += sign
	default:
		x := float64(sign) * math.Ldexp(v, -movavgShift)
		t := m.sum + x
		if math.Abs(m.sum) >= math.Abs(x) {
			m.comp += (m.sum - t) + x
		} else {
			m.comp += (x - t) + m.sum
		}
		m.sum = t
	}
}

func (m *movavg) recompute() {
	m.sum, m.comp, m.posInf, m.negInf, m.sinceRecompute = 0, 0, 0, 0, 0
	for _, v := range m.ring {
		m.add(v, 1)
	}
}
