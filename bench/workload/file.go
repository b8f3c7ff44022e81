package workload

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/klauspost/compress/zstd"
	promodel "github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/prompb"
)

// zstdMagic starts every zstd frame.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// maxRecord bounds one remote-write record of a dump, so that a corrupt
// length fails cleanly instead of allocating gigabytes.
const maxRecord = 256 << 20

// FromFile loads real data from path. A file that starts with the zstd
// magic number is a remote-write dump: a zstd stream of records, each a
// uint32 big-endian length and that many bytes of a raw (not snappy)
// prompb.WriteRequest. Any other file is text exposition with an explicit
// timestamp on every sample: OpenMetrics if its last line is "# EOF", the
// Prometheus text format otherwise. Series are grouped into targets by
// their (job, instance) labels. Errors name the file and the record
// (dump) or line (text).
func FromFile(path string) (Workload, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	head, err := br.Peek(len(zstdMagic))
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("workload: read %s: %w", path, err)
	}
	if bytes.Equal(head, zstdMagic) {
		return readDump(path, br)
	}
	data, err := io.ReadAll(br)
	if err != nil {
		return nil, fmt.Errorf("workload: read %s: %w", path, err)
	}
	return parseText(path, data)
}

// readDump reads a zstd-compressed remote-write dump.
func readDump(path string, r io.Reader) (*fileWorkload, error) {
	zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("workload: %s: %w", path, err)
	}
	defer zr.Close()
	br := bufio.NewReaderSize(zr, 1<<16)
	b := newFileBuilder(path)
	var (
		hdr  [4]byte
		buf  []byte
		off  int64 // in the decompressed stream
		pair []prompb.Label
		key  []byte
	)
	for rec := 1; ; rec++ {
		where := func() string { return fmt.Sprintf("%s: record %d (byte %d)", path, rec, off) }
		if _, err := io.ReadFull(br, hdr[:]); errors.Is(err, io.EOF) {
			break
		} else if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("workload: %s: truncated length", where())
		} else if err != nil {
			return nil, fmt.Errorf("workload: %s: %w", where(), err)
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n > maxRecord {
			return nil, fmt.Errorf("workload: %s: length %d exceeds %d", where(), n, maxRecord)
		}
		buf = slices.Grow(buf[:0], int(n))[:n]
		if got, err := io.ReadFull(br, buf); errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("workload: %s: truncated: %d of %d bytes", where(), got, n)
		} else if err != nil {
			return nil, fmt.Errorf("workload: %s: %w", where(), err)
		}
		var wr prompb.WriteRequest
		if err := wr.Unmarshal(buf); err != nil {
			return nil, fmt.Errorf("workload: %s: decode WriteRequest: %w", where(), err)
		}
		for i := range wr.Timeseries {
			ts := &wr.Timeseries[i]
			pair = append(pair[:0], ts.Labels...)
			pair = slices.DeleteFunc(pair, func(l prompb.Label) bool { return l.Value == "" })
			slices.SortFunc(pair, func(a, b prompb.Label) int { return cmp.Compare(a.Name, b.Name) })
			key = key[:0]
			for _, l := range pair {
				key = append(append(append(append(key, l.Name...), 0xff), l.Value...), 0xfe)
			}
			s := b.bykey[string(key)]
			if s == nil {
				sb := labels.NewScratchBuilder(len(pair))
				for _, l := range pair {
					sb.Add(l.Name, l.Value)
				}
				if s, err = b.newSeries(string(key), sb.Labels()); err != nil {
					return nil, fmt.Errorf("workload: %s: %w", where(), err)
				}
			}
			if len(ts.Histograms) > 0 {
				return nil, fmt.Errorf("workload: %s: series %s: native histograms are not supported", where(), s.ls)
			}
			for _, smp := range ts.Samples {
				if err := s.add(smp.Timestamp, smp.Value); err != nil {
					return nil, fmt.Errorf("workload: %s: %w", where(), err)
				}
			}
		}
		off += 4 + int64(n)
	}
	return b.finish()
}

// parseText reads text exposition (OpenMetrics or Prometheus text) in which
// every sample has a timestamp. textparse reports errors without a
// position, so parseText follows the entries through the input to name the
// line, and turns a parser panic into an error.
func parseText(path string, data []byte) (*fileWorkload, error) {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		// The text lexer takes a NUL for the end of the input.
		return nil, fmt.Errorf("workload: %s:%d: NUL byte", path, 1+bytes.Count(data[:i], []byte("\n")))
	}
	ct := "text/plain"
	if isOpenMetrics(data) {
		ct = "application/openmetrics-text"
	} else if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(slices.Clip(data), '\n') // the text format wants a final newline
	}
	p, err := textparse.New(data, ct, labels.NewSymbolTable(), textparse.ParserOptions{})
	if p == nil {
		return nil, fmt.Errorf("workload: %s: %w", path, err)
	}
	b := newFileBuilder(path)
	t := textCursor{data: data, skipBlank: ct == "text/plain", line: 1}
	var ls labels.Labels
	for {
		t.skip()
		e, err := nextEntry(p)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("workload: %s:%d: %w", path, t.line, err)
		}
		switch e {
		case textparse.EntrySeries:
			series, ts, v := p.Series()
			if err := entryLabels(p, &ls); err != nil {
				return nil, fmt.Errorf("workload: %s:%d: %w", path, t.line, err)
			}
			line := t.line
			t.pass(series)
			if ts == nil {
				return nil, fmt.Errorf("workload: %s:%d: sample without timestamp: %s", path, line, series)
			}
			if err := b.addText(ls, *ts, v); err != nil {
				return nil, fmt.Errorf("workload: %s:%d: %w", path, line, err)
			}
		case textparse.EntryHistogram:
			return nil, fmt.Errorf("workload: %s:%d: native histograms are not supported", path, t.line)
		default: // HELP, TYPE, UNIT, comments: one line each
			t.pass(nil)
		}
	}
	if t.skipBlank {
		if t.skip(); t.off < len(data) {
			return nil, fmt.Errorf("workload: %s:%d: parser stopped before this line", path, t.line)
		}
	}
	return b.finish()
}

// isOpenMetrics reports whether data's last non-blank line is "# EOF".
func isOpenMetrics(data []byte) bool {
	d := bytes.TrimRight(data, " \t\r\n")
	return bytes.HasSuffix(d, []byte("# EOF")) &&
		(len(d) == 5 || d[len(d)-6] == '\n')
}

// nextEntry is p.Next, with a panic turned into an error.
func nextEntry(p textparse.Parser) (e textparse.Entry, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed input: %v", r)
		}
	}()
	return p.Next()
}

// entryLabels is p.Labels, with a panic turned into an error, and the
// labels checked.
func entryLabels(p textparse.Parser, ls *labels.Labels) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed series: %v", r)
		}
	}()
	p.Labels(ls)
	return nil
}

// textCursor follows textparse through its input: off is where the next
// entry's line starts, line its number.
type textCursor struct {
	data      []byte
	off       int
	line      int
	skipBlank bool
}

// skip passes blank lines, which the text format ignores.
func (t *textCursor) skip() {
	if !t.skipBlank {
		return
	}
	for t.off < len(t.data) {
		end := t.lineEnd(t.off)
		if len(bytes.Trim(t.data[t.off:end], " \t\n")) > 0 {
			return
		}
		t.off, t.line = end, t.line+1
	}
}

// pass moves past the current entry: to the end of the line where part
// ends, when part is a slice of the input (a quoted label value may hold
// newlines), else past one line.
func (t *textCursor) pass(part []byte) {
	end := t.off
	if len(part) > 0 {
		start := cap(t.data) - cap(part)
		if start >= t.off && start+len(part) <= len(t.data) && &t.data[start] == &part[0] {
			end = start + len(part)
		}
	}
	next := t.lineEnd(end)
	t.line += bytes.Count(t.data[t.off:next], []byte("\n"))
	t.off = next
}

func (t *textCursor) lineEnd(off int) int {
	if i := bytes.IndexByte(t.data[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(t.data)
}

// fileBuilder collects the series of a file.
type fileBuilder struct {
	path  string
	bykey map[string]*rawSeries
	all   []*rawSeries
	key   []byte
}

// rawSeries is one series' samples as read.
type rawSeries struct {
	ls       labels.Labels
	t        []int64
	v        []float64
	unsorted bool // a sample came before an earlier one
}

func newFileBuilder(path string) *fileBuilder {
	return &fileBuilder{path: path, bykey: map[string]*rawSeries{}}
}

func (b *fileBuilder) newSeries(key string, ls labels.Labels) (*rawSeries, error) {
	switch {
	case ls.IsEmpty():
		return nil, errors.New("series without labels")
	case !ls.IsValid(promodel.UTF8Validation):
		return nil, fmt.Errorf("series %s: invalid label name or value", ls)
	}
	if n, dup := ls.HasDuplicateLabelNames(); dup {
		return nil, fmt.Errorf("series %s: duplicate label %q", ls, n)
	}
	s := &rawSeries{ls: ls}
	b.bykey[key] = s
	b.all = append(b.all, s)
	return s, nil
}

// addText adds a sample of a text file, whose labels come sorted.
func (b *fileBuilder) addText(ls labels.Labels, t int64, v float64) error {
	b.key = b.key[:0]
	ls.Range(func(l labels.Label) {
		if l.Value != "" {
			b.key = append(append(append(append(b.key, l.Name...), 0xff), l.Value...), 0xfe)
		}
	})
	s := b.bykey[string(b.key)]
	if s == nil {
		lb := labels.NewBuilder(ls)
		ls.Range(func(l labels.Label) {
			if l.Value == "" {
				lb.Del(l.Name)
			}
		})
		var err error
		if s, err = b.newSeries(string(b.key), lb.Labels()); err != nil {
			return err
		}
	}
	return s.add(t, v)
}

// add appends a sample. An identical repeat of the last sample is
// dropped; a different value at the same time is an error.
func (s *rawSeries) add(t int64, v float64) error {
	if n := len(s.t); n > 0 && t <= s.t[n-1] {
		if t == s.t[n-1] {
			if math.Float64bits(v) == math.Float64bits(s.v[n-1]) {
				return nil
			}
			return fmt.Errorf("series %s: two values at timestamp %d: %v and %v", s.ls, t, s.v[n-1], v)
		}
		s.unsorted = true
	}
	s.t = append(s.t, t)
	s.v = append(s.v, v)
	return nil
}

// finish groups the series into targets and lays them out in rows.
func (b *fileBuilder) finish() (*fileWorkload, error) {
	w := &fileWorkload{name: "file:" + filepath.Base(b.path), minT: math.MaxInt64, maxT: math.MinInt64}
	type group struct {
		job, instance string
		series        []*rawSeries
	}
	groups := map[[2]string]*group{}
	for _, s := range b.all {
		if s.unsorted {
			if err := s.sort(); err != nil {
				return nil, fmt.Errorf("workload: %s: %w", b.path, err)
			}
		}
		k := [2]string{s.ls.Get("job"), s.ls.Get("instance")}
		g := groups[k]
		if g == nil {
			g = &group{job: k[0], instance: k[1]}
			groups[k] = g
		}
		g.series = append(g.series, s)
	}
	if len(groups) == 0 {
		return nil, fmt.Errorf("workload: %s: no samples", b.path)
	}
	gs := make([]*group, 0, len(groups))
	for _, g := range groups {
		gs = append(gs, g)
	}
	slices.SortFunc(gs, func(a, b *group) int {
		return cmp.Or(cmp.Compare(a.job, b.job), cmp.Compare(a.instance, b.instance))
	})
	var diffs []int64
	for _, g := range gs {
		slices.SortFunc(g.series, func(a, b *rawSeries) int { return labels.Compare(a.ls, b.ls) })
		ft := &fileTarget{}
		for _, s := range g.series {
			ft.times = append(ft.times, s.t...)
		}
		slices.Sort(ft.times)
		ft.times = slices.Clip(slices.Compact(ft.times))
		n := len(ft.times)
		for _, s := range g.series {
			vals := make([]float64, n)
			var present []uint64
			if len(s.t) < n {
				present = make([]uint64, (n+63)/64)
				ft.sparse = true
			}
			j := 0
			for i, t := range s.t {
				for ft.times[j] < t {
					j++
				}
				vals[j] = s.v[i]
				if present != nil {
					present[j/64] |= 1 << (j % 64)
				}
			}
			ft.series = append(ft.series, s.ls)
			ft.values = append(ft.values, vals)
			ft.present = append(ft.present, present)
			w.samples += int64(len(s.t))
			s.t, s.v = nil, nil // done with them
		}
		w.minT = min(w.minT, ft.times[0])
		w.maxT = max(w.maxT, ft.times[n-1])
		for i := 1; i < n; i++ {
			diffs = append(diffs, ft.times[i]-ft.times[i-1])
		}
		w.targets = append(w.targets, ft)
	}
	if len(diffs) > 0 {
		slices.Sort(diffs)
		w.interval = time.Duration(diffs[len(diffs)/2]) * time.Millisecond
	}
	return w, nil
}

// sort orders a series' samples by time, dropping identical repeats.
func (s *rawSeries) sort() error {
	idx := make([]int, len(s.t))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(s.t[a], s.t[b]) })
	t := make([]int64, 0, len(s.t))
	v := make([]float64, 0, len(s.v))
	for _, i := range idx {
		if n := len(t); n > 0 && t[n-1] == s.t[i] {
			if math.Float64bits(v[n-1]) != math.Float64bits(s.v[i]) {
				return fmt.Errorf("series %s: two values at timestamp %d: %v and %v", s.ls, s.t[i], v[n-1], s.v[i])
			}
			continue
		}
		t = append(t, s.t[i])
		v = append(v, s.v[i])
	}
	s.t, s.v, s.unsorted = t, v, false
	return nil
}

// fileWorkload is data read by FromFile, held in memory.
type fileWorkload struct {
	name       string
	targets    []*fileTarget
	minT, maxT int64
	samples    int64
	interval   time.Duration // median time between rows; 0 if no target has two
}

// fileTarget is one (job, instance): its rows' times, and per series a
// value for every row and, if it misses some rows, a bitmap of those it has.
type fileTarget struct {
	series  []labels.Labels
	times   []int64
	values  [][]float64 // [series][row]
	present [][]uint64  // [series][row/64]; nil: present in every row
	sparse  bool        // some series misses a row
}

func (w *fileWorkload) Name() string                      { return w.name }
func (w *fileWorkload) NumTargets() int                   { return len(w.targets) }
func (w *fileWorkload) Series(target int) []labels.Labels { return w.targets[target].series }
func (w *fileWorkload) MinTime() int64                    { return w.minT }
func (w *fileWorkload) MaxTime() int64                    { return w.maxT }
func (w *fileWorkload) Samples() int64                    { return w.samples }
func (w *fileWorkload) Interval() time.Duration           { return w.interval }
func (w *fileWorkload) Scraper(target int) Scraper {
	return &fileScraper{t: w.targets[target]}
}

type fileScraper struct {
	t *fileTarget
	i int
}

func (s *fileScraper) Next(row *Row) bool {
	ft, i := s.t, s.i
	if i >= len(ft.times) {
		return false
	}
	n := len(ft.series)
	row.T = ft.times[i]
	row.Values = slices.Grow(row.Values[:0], n)[:n]
	for j, vals := range ft.values {
		row.Values[j] = vals[i]
	}
	if ft.sparse {
		row.Present = slices.Grow(row.Present[:0], n)[:n]
		for j, p := range ft.present {
			row.Present[j] = p == nil || p[i/64]&(1<<(i%64)) != 0
		}
	} else {
		row.Present = nil
	}
	s.i++
	return true
}
