// Package codecbench is `aerie bench codec`: the block codec's bytes and
// speed on real or generated data, against Prometheus' XOR chunks, in
// this process.
//
// Every target's scrapes are cut into 2 h windows as blocks cut them. In a
// window Aerie stores the group's timestamps once (encoding's scaled
// timestamps) and one value column per series (tuples of 8, blocks of 10
// tuples, with its ColumnMeta); Prometheus stores each series in XOR
// chunks of at most 120 samples. Bytes count the encoded data and Aerie's
// column metas, not file headers, indexes or CRCs (disk_bytes_per_sample
// of `aerie bench node` counts whole blocks). Encode and decode times are
// the fastest of --runs passes over all windows, per sample. Every decoded
// value is compared bit for bit with the input, or the run fails.
//
// Invariants:
//
//  1. Both codecs see the same windows, series and samples; a sample is
//     counted once for each.
//  2. No timing is asserted; a decoded value that differs fails the run.
package codecbench

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/spf13/pflag"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/bench/workload"
	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/encoding"
)

// Kind marks the JSON of a codec report.
const Kind = "codec"

// Codec is `aerie bench codec`.
var Codec = &harness.Workload{
	Name:     "codec",
	Compares: "the block codec (group timestamps, value columns) against Prometheus' XOR chunks on the real node capture: bytes, encode and decode time per sample; in process",
	Doc: `codec encodes every 2 h window of every target of the data (default the
real node_exporter capture in ../shared/data) with Aerie's block codec and
with Prometheus' XOR chunks, decodes both, checks every value, and reports
bytes, encode and decode nanoseconds per sample with the ratios Aerie ÷
Prometheus. See bench/codecbench.`,
	Kind: Kind,
	Read: harness.ReadAs[Report](Kind),
	Flags: func(f *pflag.FlagSet) harness.Run {
		var input string
		var every, runs int
		f.StringVar(&input, "input", "", "a remote-write dump or timestamped text (default ../shared/data/node-1s-a.rwpb.zst)")
		f.IntVar(&every, "every", 0, "keep every n-th scrape (5: the capture at 5 s, 15: at 15 s; default 1)")
		f.IntVar(&runs, "runs", 0, "timed passes, the fastest reported (default: small 1, medium 5)")
		return func(_ context.Context, o harness.Options) (harness.Report, error) {
			return run(o, input, max(every, 1), runs)
		}
	},
}

// Report is one run.
type Report struct {
	harness.Header
	Input   string   `json:"input"`
	Every   int      `json:"every"`
	Series  int      `json:"series"`
	Windows int      `json:"windows"` // target × 2 h windows
	Samples int64    `json:"samples"`
	Runs    int      `json:"runs"`
	Results []Result `json:"results"`
}

// Result is one figure of both codecs.
type Result struct {
	Name       string  `json:"name"`
	Unit       string  `json:"unit"`
	Aerie      float64 `json:"aerie"`
	Prometheus float64 `json:"prometheus"`
	Ratio      float64 `json:"ratio"` // Aerie ÷ Prometheus; lower is better
}

// window is one target's rows in one 2 h block range.
type window struct {
	ts     []int64
	vals   [][]float64 // by series, by row
	pres   [][]bool    // by series, by row; nil: every row present
	series int
}

const blockSpan = int64(2 * time.Hour / time.Millisecond)

func run(o harness.Options, input string, every, runs int) (*Report, error) {
	if runs == 0 {
		runs = map[string]int{"small": 1, "medium": 5, "large": 10}[o.Scale]
		if runs == 0 {
			return nil, fmt.Errorf("--scale=%q: want small, medium or large", o.Scale)
		}
	}
	if input == "" {
		input = harness.SharedPath("data", "node-1s-a.rwpb.zst")
	}
	w, err := workload.FromFile(input)
	if err != nil {
		return nil, err
	}
	rep := &Report{Header: harness.NewHeader(Kind, o.Scale), Input: filepath.Base(input), Every: every, Runs: runs}
	wins := windows(w, every, rep)
	harness.Logf(o.Log, "%d series, %d windows, %d samples", rep.Series, rep.Windows, rep.Samples)
	var a, v1, p codecStats
	for range runs {
		if err := a.pass(wins, aerieCodec); err != nil {
			return nil, err
		}
		if err := v1.pass(wins, aerieV1Codec); err != nil {
			return nil, err
		}
		if err := p.pass(wins, promCodec); err != nil {
			return nil, err
		}
	}
	n := float64(rep.Samples)
	rep.add("bytes_per_sample", "B", float64(a.bytes)/n, float64(p.bytes)/n)
	rep.add("encode_ns_per_sample", "ns", float64(a.enc)/n, float64(p.enc)/n)
	rep.add("decode_ns_per_sample", "ns", float64(a.dec)/n, float64(p.dec)/n)
	rep.add("v1_bytes_per_sample", "B", float64(v1.bytes)/n, float64(p.bytes)/n)
	rep.add("v1_decode_ns_per_sample", "ns", float64(v1.dec)/n, float64(p.dec)/n)
	rep.Done()
	return rep, nil
}

// windows reads every target's rows (every n-th) into 2 h windows.
func windows(w workload.Workload, every int, rep *Report) []*window {
	var out []*window
	for t := range w.NumTargets() {
		ns := len(w.Series(t))
		rep.Series += ns
		var cur *window
		sc, row := w.Scraper(t), &workload.Row{}
		for i := 0; sc.Next(row); i++ {
			if i%every != 0 {
				continue
			}
			if cur == nil || row.T/blockSpan != cur.ts[0]/blockSpan {
				cur = &window{series: ns, vals: make([][]float64, ns), pres: make([][]bool, ns)}
				out = append(out, cur)
			}
			r := len(cur.ts)
			cur.ts = append(cur.ts, row.T)
			for s := range ns {
				present := row.Present == nil || row.Present[s]
				cur.vals[s] = append(cur.vals[s], row.Values[s])
				if !present && cur.pres[s] == nil {
					cur.pres[s] = make([]bool, r, cap(cur.ts))
					for k := range cur.pres[s] {
						cur.pres[s][k] = true
					}
				}
				if cur.pres[s] != nil {
					cur.pres[s] = append(cur.pres[s], present)
				}
				if present {
					rep.Samples++
				}
			}
		}
	}
	rep.Windows = len(out)
	return out
}

// codecStats are the fastest pass' times and the bytes.
type codecStats struct {
	bytes    int64
	enc, dec time.Duration
}

// codec encodes a window and returns a decoder of what it encoded, which
// compares every value with the window's when check is set.
type codec func(w *window) (bytes int64, decode func(check bool) error)

func (c *codecStats) pass(wins []*window, cd codec) error {
	var bytes int64
	var enc, dec time.Duration
	for _, w := range wins {
		t0 := time.Now()
		n, decode := cd(w)
		t1 := time.Now()
		if err := decode(false); err != nil {
			return err
		}
		enc, dec, bytes = enc+t1.Sub(t0), dec+time.Since(t1), bytes+n
		if err := decode(true); err != nil { // untimed
			return err
		}
	}
	c.bytes = bytes
	if c.enc == 0 || enc < c.enc {
		c.enc = enc
	}
	if c.dec == 0 || dec < c.dec {
		c.dec = dec
	}
	return nil
}

// aerieCodec is the block codec of today (index version 4): the group's
// scaled timestamps and a value column of data version 3 per series.
func aerieCodec(w *window) (int64, func(bool) error) {
	cc := block.NewColumnCodec()
	cols, metas := make([][]byte, w.series), make([][]byte, w.series)
	return groupCodec(w, func(s int) int64 {
		cols[s], metas[s] = cc.Append(nil, nil, w.vals[s], w.pres[s])
		return int64(len(cols[s]) + len(metas[s]))
	}, func(s int, vals []float64, pres []bool, rows int) ([]float64, []bool, error) {
		return cc.Decode(vals, pres, metas[s], cols[s], rows)
	})
}

// aerieV1Codec is the block codec of index versions 1 and 2: value
// columns of padded XOR tuples (still read).
func aerieV1Codec(w *window) (int64, func(bool) error) {
	cols, metas := make([][]byte, w.series), make([]encoding.ColumnMeta, w.series)
	var metaBuf []byte
	return groupCodec(w, func(s int) int64 {
		cols[s], metas[s] = encoding.AppendColumn(nil, w.vals[s], w.pres[s], encoding.DefaultTupleSize, encoding.DiskBlockTuples)
		metaBuf = encoding.AppendColumnMeta(metaBuf[:0], &metas[s])
		return int64(len(cols[s]) + len(metaBuf))
	}, func(s int, vals []float64, pres []bool, _ int) ([]float64, []bool, error) {
		return encoding.DecodeColumn(vals, pres, &metas[s], cols[s])
	})
}

// groupCodec encodes a window as a block group: its scaled timestamps,
// then each series' value column with enc (which returns the column's
// bytes, meta included). The decoder it returns decodes the timestamps
// and every column with dec, comparing each row with the window's when
// check is set.
func groupCodec(w *window, enc func(s int) int64, dec func(s int, vals []float64, pres []bool, rows int) ([]float64, []bool, error)) (int64, func(bool) error) {
	tsBuf := encoding.AppendScaledTimestamps(nil, w.ts)
	n := int64(len(tsBuf))
	for s := range w.series {
		n += enc(s)
	}
	return n, func(check bool) error {
		st, _, err := encoding.ParseScaledTimestamps(tsBuf)
		if err != nil {
			return err
		}
		ts := st.AppendAll(nil)
		var vals []float64
		var pres []bool
		for s := range w.series {
			if vals, pres, err = dec(s, vals[:0], pres[:0], len(ts)); err != nil {
				return err
			}
			if !check {
				continue
			}
			for i := range ts {
				want := w.pres[s] == nil || w.pres[s][i]
				if pres[i] != want || (want && math.Float64bits(vals[i]) != math.Float64bits(w.vals[s][i])) || ts[i] != w.ts[i] {
					return fmt.Errorf("aerie: series %d row %d decodes to %v (present %v), want %v", s, i, vals[i], pres[i], w.vals[s][i])
				}
			}
		}
		return nil
	}
}

const promSamplesPerChunk = 120

func promCodec(w *window) (int64, func(bool) error) {
	var chunks [][]*chunkenc.XORChunk
	var n int64
	for s := range w.series {
		var cs []*chunkenc.XORChunk
		var app chunkenc.Appender
		for i, t := range w.ts {
			if w.pres[s] != nil && !w.pres[s][i] {
				continue
			}
			if len(cs) == 0 || cs[len(cs)-1].NumSamples() == promSamplesPerChunk {
				c := chunkenc.NewXORChunk()
				app, _ = c.Appender()
				cs = append(cs, c)
			}
			app.Append(0, t, w.vals[s][i])
		}
		for _, c := range cs {
			n += int64(len(c.Bytes()))
		}
		chunks = append(chunks, cs)
	}
	return n, func(check bool) error {
		var it chunkenc.Iterator
		for s, cs := range chunks {
			i := 0
			for _, c := range cs {
				it = c.Iterator(it)
				for it.Next() == chunkenc.ValFloat {
					t, v := it.At()
					if !check {
						continue
					}
					for w.pres[s] != nil && !w.pres[s][i] {
						i++
					}
					if t != w.ts[i] || math.Float64bits(v) != math.Float64bits(w.vals[s][i]) {
						return fmt.Errorf("prometheus: series %d row %d decodes to %d %v", s, i, t, v)
					}
					i++
				}
				if err := it.Err(); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

func (r *Report) add(name, unit string, a, p float64) {
	ratio := 0.0
	if p != 0 {
		ratio = a / p
	}
	r.Results = append(r.Results, Result{Name: name, Unit: unit, Aerie: a, Prometheus: p, Ratio: ratio})
}

// WriteJSON writes the report as JSON.
func (r *Report) WriteJSON(w io.Writer) error { return harness.WriteJSON(w, r) }

// WriteTable writes the figures for the terminal.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "codec: %d series, %d windows, %d samples of %s (every %d); commit %s\n", r.Series, r.Windows, r.Samples, r.Input, r.Every, r.Commit)
	fmt.Fprintln(tw, "name\tunit\taerie\tprometheus\tratio\t")
	for _, x := range r.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.3f\t\n", x.Name, x.Unit, harness.Num(x.Aerie), harness.Num(x.Prometheus), x.Ratio)
	}
	return tw.Flush()
}

// WriteMarkdown writes the report's section of docs/BENCHMARKS.md.
func (r *Report) WriteMarkdown(w io.Writer) error {
	fmt.Fprintf(w, "## Codec: the block codec against XOR chunks (%s scale)\n\n", r.Scale)
	every := "every scrape"
	if r.Every > 1 {
		every = fmt.Sprintf("every %d-th scrape", r.Every)
	}
	fmt.Fprintf(w, "`aerie bench codec` (bench/codecbench): %d series of `%s` (%s), cut into %d target × 2 h windows, %d samples; the fastest of %d passes. Aerie: the group's timestamps once per window, a value column per series with its meta; Prometheus: XOR chunks of ≤ 120 samples; no file headers, indexes or CRCs. Commit `%s`, %s.\n\n",
		r.Series, r.Input, every, r.Windows, r.Samples, r.Runs, r.Commit, r.Date)
	fmt.Fprintf(w, "| name | unit | Aerie | Prometheus | ratio |\n|---|---|---:|---:|---:|\n")
	for _, x := range r.Results {
		fmt.Fprintf(w, "| `%s` | %s | %s | %s | %.3f |\n", x.Name, x.Unit, harness.Num(x.Aerie), harness.Num(x.Prometheus), x.Ratio)
	}
	_, err := fmt.Fprintln(w)
	return err
}
