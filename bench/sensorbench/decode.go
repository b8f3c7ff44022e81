package sensorbench

import (
	"fmt"
	"math"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/internal/tsdb"
)

// decodeMethod says how DecodeResult is measured.
const decodeMethod = "in-process: internal/tsdb opens the directory `aerie import` wrote (every sample in blocks; its background loops off), compacts it as the server's loop would (untimed), and one goroutine iterates every sample of every sensor through a Querier twice; the second pass is reported, per CPU second of this process (getrusage)"

// decode opens the data directory of `aerie import` in this process and
// iterates every sample of every sensor twice, checking counts, times and
// values against the data; the second pass is timed.
func (r *runner) decode() error {
	db, err := tsdb.Open(r.dir(dirImport), &tsdb.Options{FlushCheckInterval: -1})
	if err != nil {
		return fmt.Errorf("open %s: %w", r.dir(dirImport), err)
	}
	defer db.Close()
	before := len(db.Blocks())
	if err := db.CompactBlocks(); err != nil {
		return fmt.Errorf("compact %s: %w", r.dir(dirImport), err)
	}
	res := &DecodeResult{Method: decodeMethod, Blocks: len(db.Blocks())}
	r.logf("decode: %d blocks (%d before compaction)", res.Blocks, before)
	var (
		wall [2]time.Duration
		cpu  time.Duration
	)
	for pass := range 2 {
		cpu0 := harness.SelfCPU()
		t0 := time.Now()
		n, err := r.iterateAll(db, pass == 0)
		wall[pass] = time.Since(t0)
		cpu = harness.SelfCPU() - cpu0
		if err != nil {
			return err
		}
		res.Samples = n
	}
	res.FirstSeconds, res.Seconds, res.CPUSeconds = wall[0].Seconds(), wall[1].Seconds(), cpu.Seconds()
	res.SamplesPerSecond, res.SamplesPerCPUSecond = perSecond(res.Samples, res.Seconds), perSecond(res.Samples, res.CPUSeconds)
	r.rep.Decode = res
	r.logf("decode: %d samples, first pass %.2f s, second %.2f s (%.2f CPU s): %.1f M samples/s, %.1f M per CPU second",
		res.Samples, res.FirstSeconds, res.Seconds, res.CPUSeconds, res.SamplesPerSecond/1e6, res.SamplesPerCPUSecond/1e6)
	return nil
}

// iterateAll reads every sample of every sensor and checks each sensor's
// count, first and last time and, with values, the sum of its values (in
// hundredths, which costs a rounding per sample).
func (r *runner) iterateAll(db *tsdb.DB, values bool) (int64, error) {
	d := r.d
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	if err != nil {
		return 0, err
	}
	defer q.Close()
	var (
		total int64
		it    chunkenc.Iterator
	)
	for _, s := range d.Sensors {
		ss := q.Select(r.ctx, false, nil, labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, s.Name))
		var (
			n           int64
			first, last int64
			sum         int64
		)
		for ss.Next() {
			it = ss.At().Iterator(it)
			for it.Next() != chunkenc.ValNone {
				t, v := it.At()
				if n == 0 {
					first = t
				}
				last = t
				if values {
					sum += int64(math.Round(v * 100))
				}
				n++
			}
			if err := it.Err(); err != nil {
				return total, fmt.Errorf("decode %s: %w", s.Name, err)
			}
		}
		if err := ss.Err(); err != nil {
			return total, fmt.Errorf("decode %s: %w", s.Name, err)
		}
		if !values {
			sum = s.Sum
		}
		if n != d.Points || first != d.Start || last != d.end() || sum != s.Sum {
			return total, fmt.Errorf("%w: %s decodes %d samples from %d to %d summing to %d hundredths; want %d from %d to %d summing to %d",
				ErrMismatch, s.Name, n, first, last, sum, d.Points, d.Start, d.end(), s.Sum)
		}
		total += n
	}
	return total, nil
}
