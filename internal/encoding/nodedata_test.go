package encoding

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/prometheus/prompb"
)

// nodeCapture is the real node_exporter + Prometheus capture described in
// /work/shared/data/README.md.
const nodeCapture = "/work/shared/data/node-1s-a.rwpb.zst"

// benchSeries is one series' samples in time order; col and present are its
// values on the rows of its group (present[i] false where it has none).
type benchSeries struct {
	ts      []int64
	vals    []float64
	col     []float64
	present []bool
}

// benchGroup is the series of one job+instance with their shared rows.
type benchGroup struct {
	name   string
	rows   []int64
	series []*benchSeries
}

type benchData struct {
	groups  []*benchGroup
	samples int
}

var (
	nodeOnce sync.Once
	nodeData *benchData
	nodeErr  error
)

// loadNode reads the capture once: records of uint32 big-endian length and a
// raw prompb.WriteRequest, zstd-compressed.
func loadNode() (*benchData, error) {
	nodeOnce.Do(func() { nodeData, nodeErr = readCapture(nodeCapture) })
	return nodeData, nodeErr
}

func readCapture(path string) (*benchData, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	br := bufio.NewReader(zr)
	series := map[string]*benchSeries{}
	groupOf := map[string]string{}
	var order []string
	var hdr [4]byte
	var buf []byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("read record length: %w", err)
		}
		n := binary.BigEndian.Uint32(hdr[:])
		buf = slices.Grow(buf[:0], int(n))[:n]
		if _, err := io.ReadFull(br, buf); err != nil {
			return nil, fmt.Errorf("read record: %w", err)
		}
		var req prompb.WriteRequest
		if err := req.Unmarshal(buf); err != nil {
			return nil, fmt.Errorf("unmarshal record: %w", err)
		}
		for _, ts := range req.Timeseries {
			var key strings.Builder
			var job, inst string
			for _, l := range ts.Labels {
				key.WriteString(l.Name + "=" + l.Value + ",")
				switch l.Name {
				case "job":
					job = l.Value
				case "instance":
					inst = l.Value
				}
			}
			k := key.String()
			s := series[k]
			if s == nil {
				s = &benchSeries{}
				series[k] = s
				groupOf[k] = job + "/" + inst
				order = append(order, k)
			}
			for _, smp := range ts.Samples {
				if n := len(s.ts); n > 0 && smp.Timestamp <= s.ts[n-1] {
					continue // duplicates or out of order: not in this capture, but be safe
				}
				s.ts = append(s.ts, smp.Timestamp)
				s.vals = append(s.vals, smp.Value)
			}
		}
	}
	slices.Sort(order)
	d := &benchData{}
	groups := map[string]*benchGroup{}
	for _, k := range order {
		g := groups[groupOf[k]]
		if g == nil {
			g = &benchGroup{name: groupOf[k]}
			groups[groupOf[k]] = g
			d.groups = append(d.groups, g)
		}
		s := series[k]
		if len(s.ts) == 0 {
			continue
		}
		g.series = append(g.series, s)
		g.rows = append(g.rows, s.ts...)
		d.samples += len(s.ts)
	}
	for _, g := range d.groups {
		slices.Sort(g.rows)
		g.rows = slices.Compact(g.rows)
		for _, s := range g.series {
			s.col, s.present = onRows(g.rows, s.ts, s.vals)
		}
	}
	return d, nil
}

// onRows spreads a series' samples over its group's rows.
func onRows(rows, ts []int64, vals []float64) ([]float64, []bool) {
	col := make([]float64, len(rows))
	present := make([]bool, len(rows))
	j := 0
	for i, r := range rows {
		if j < len(ts) && ts[j] == r {
			col[i], present[i] = vals[j], true
			j++
		}
	}
	return col, present
}
