package httpbench

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"golang.org/x/sync/errgroup"

	"github.com/aerie-db/aerie/bench/workload"
)

// Protocols of the ingest phase.
const (
	lineProtocol = "influx"       // POST /write?precision=ms
	remoteWrite  = "remote-write" // POST /api/v1/write, Prometheus remote write 1.0
)

var protocols = []string{lineProtocol, remoteWrite}

// body is one request.
type body struct {
	data    []byte
	samples int
}

// encoded is a workload's requests in one protocol: streams[s] holds the
// requests of the targets i with i mod len(streams) == s, in time order.
type encoded struct {
	protocol string
	streams  [][]body
	samples  int64
	bytes    int64
	// perName counts the samples of each metric name as the servers name
	// it (line protocol: measurement_field).
	perName map[string]int64
}

// requests returns the number of requests.
func (e *encoded) requests() int {
	n := 0
	for _, s := range e.streams {
		n += len(s)
	}
	return n
}

// clientBodies returns the requests of client c of n in sending order:
// client c owns the streams s with s mod n == c and sends their j-th
// requests, stream after stream, before any (j+1)-th, so that every
// client walks through time as the others do.
func (e *encoded) clientBodies(c, n int) []body {
	var own [][]body
	for s := c; s < len(e.streams); s += n {
		own = append(own, e.streams[s])
	}
	var out []body
	for j := 0; ; j++ {
		more := false
		for _, st := range own {
			if j < len(st) {
				out = append(out, st[j])
				more = true
			}
		}
		if !more {
			return out
		}
	}
}

// encodeWorkload generates every row of w (untimed) and encodes it as
// requests of protocol in nstreams streams. Every request of every
// stream covers the same scrape ticks, as many as make about batch
// samples in a stream of average size, so that clients sending the j-th
// requests of their streams write the same span of time.
func encodeWorkload(w workload.Workload, protocol string, nstreams, batch int) (*encoded, error) {
	nstreams = max(1, min(nstreams, w.NumTargets()))
	series := 0
	for i := 0; i < w.NumTargets(); i++ {
		series += len(w.Series(i))
	}
	perTick := max(1, series/nstreams)
	ticks := max(1, (batch+perTick-1)/perTick)
	e := &encoded{protocol: protocol, streams: make([][]body, nstreams), perName: map[string]int64{}}
	perName := make([]map[string]int64, nstreams)
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for s := range nstreams {
		g.Go(func() (err error) {
			e.streams[s], perName[s], err = encodeStream(w, protocol, s, nstreams, ticks)
			return err
		})
	}
	err := g.Wait()
	for s, bodies := range e.streams {
		for _, b := range bodies {
			e.samples += int64(b.samples)
			e.bytes += int64(len(b.data))
		}
		for k, v := range perName[s] {
			e.perName[k] += v
		}
	}
	return e, err
}

// encodeStream encodes the rows of the targets s, s+n, … tick by tick,
// ticks scrape ticks per request.
func encodeStream(w workload.Workload, protocol string, s, n, ticks int) ([]body, map[string]int64, error) {
	var enc batchEncoder
	switch protocol {
	case lineProtocol:
		enc = &lpEncoder{}
	case remoteWrite:
		enc = &rwEncoder{}
	default:
		return nil, nil, fmt.Errorf("unknown protocol %q", protocol)
	}
	type target struct {
		id  int
		sc  workload.Scraper
		row workload.Row
	}
	var ts []*target
	for i := s; i < w.NumTargets(); i += n {
		if err := enc.addTarget(i, w.Series(i)); err != nil {
			return nil, nil, err
		}
		ts = append(ts, &target{id: i, sc: w.Scraper(i)})
	}
	var out []body
	for tick := 1; ; tick++ {
		more := false
		for _, t := range ts {
			if t.sc == nil {
				continue
			}
			if !t.sc.Next(&t.row) {
				t.sc = nil
				continue
			}
			more = true
			if err := enc.addRow(t.id, &t.row); err != nil {
				return nil, nil, err
			}
		}
		if (!more || tick%ticks == 0) && enc.samples() > 0 {
			b, err := enc.flush()
			if err != nil {
				return nil, nil, err
			}
			out = append(out, b)
		}
		if !more {
			return out, enc.counts(), nil
		}
	}
}

// batchEncoder builds the requests of one stream.
type batchEncoder interface {
	addTarget(id int, series []labels.Labels) error
	addRow(id int, row *workload.Row) error
	samples() int         // in the current request
	flush() (body, error) // ends the current request
	counts() map[string]int64
}

// lpName splits a metric name into an Influx measurement and field whose
// series name (measurement_field, as both servers form it) is the metric
// name: at the first '_'; a name without one becomes name_value.
func lpName(name string) (measurement, field string) {
	if i := strings.IndexByte(name, '_'); i > 0 && i < len(name)-1 {
		return name[:i], name[i+1:]
	}
	return name, "value"
}

// lpLine is the template of the line of one target's series that share a
// measurement and a tag set: one line per scrape, one field per series.
type lpLine struct {
	prefix []byte   // escaped measurement and tags, then ' '
	fields [][]byte // escaped field key and '='
	slots  []int    // the series' slots in the row
	names  []string // the series' names as stored
	ns     []int64  // samples written per field
}

// lpEncoder writes line protocol with millisecond timestamps.
type lpEncoder struct {
	targets map[int][]*lpLine
	buf     []byte
	n       int
	lines   []*lpLine // every line template, for counts
}

func (e *lpEncoder) addTarget(id int, series []labels.Labels) error {
	if e.targets == nil {
		e.targets = map[int][]*lpLine{}
	}
	byKey := map[string]*lpLine{}
	var lines []*lpLine
	for slot, ls := range series {
		name := ls.Get(labels.MetricName)
		meas, field := lpName(name)
		var prefix []byte
		prefix = appendLPEscaped(prefix, meas, ",  ")
		bad := ""
		ls.Range(func(l labels.Label) {
			if l.Name == labels.MetricName || l.Value == "" {
				return
			}
			if strings.HasSuffix(l.Name, "\\") || strings.HasSuffix(l.Value, "\\") { // ambiguous before the next ',' or ' '
				bad = l.Name
			}
			prefix = append(prefix, ',')
			prefix = appendLPEscaped(prefix, l.Name, ",= ")
			prefix = append(prefix, '=')
			prefix = appendLPEscaped(prefix, l.Value, ",= ")
		})
		if bad != "" {
			return fmt.Errorf("series %s: label %q cannot be sent as an Influx tag", ls, bad)
		}
		prefix = append(prefix, ' ')
		ln := byKey[string(prefix)]
		if ln == nil {
			ln = &lpLine{prefix: prefix}
			byKey[string(prefix)] = ln
			lines = append(lines, ln)
			e.lines = append(e.lines, ln)
		}
		ln.fields = append(ln.fields, append(appendLPEscaped(nil, field, ",= "), '='))
		ln.slots = append(ln.slots, slot)
		ln.names = append(ln.names, meas+"_"+field)
		ln.ns = append(ln.ns, 0)
	}
	e.targets[id] = lines
	return nil
}

func (e *lpEncoder) addRow(id int, row *workload.Row) error {
	for _, ln := range e.targets[id] {
		start := len(e.buf)
		e.buf = append(e.buf, ln.prefix...)
		nf := 0
		for k, slot := range ln.slots {
			v := row.Values[slot]
			if row.Present != nil && !row.Present[slot] {
				continue
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("line protocol cannot carry %v (%s at %d)", v, ln.names[k], row.T)
			}
			if nf > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = append(e.buf, ln.fields[k]...)
			e.buf = strconv.AppendFloat(e.buf, v, 'g', -1, 64)
			ln.ns[k]++
			nf++
		}
		if nf == 0 {
			e.buf = e.buf[:start]
			continue
		}
		e.buf = append(e.buf, ' ')
		e.buf = strconv.AppendInt(e.buf, row.T, 10)
		e.buf = append(e.buf, '\n')
		e.n += nf
	}
	return nil
}

func (e *lpEncoder) samples() int { return e.n }

func (e *lpEncoder) flush() (body, error) {
	b := body{data: e.buf, samples: e.n}
	e.buf, e.n = make([]byte, 0, len(b.data)+len(b.data)/8), 0
	return b, nil
}

func (e *lpEncoder) counts() map[string]int64 {
	m := map[string]int64{}
	for _, ln := range e.lines {
		for k, name := range ln.names {
			m[name] += ln.ns[k]
		}
	}
	return m
}

// appendLPEscaped appends s with a backslash before each of the bytes in
// special (the line protocol's escaping of names, tag keys and values).
func appendLPEscaped(dst []byte, s, special string) []byte {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(special, s[i]) >= 0 {
			dst = append(dst, '\\')
		}
		dst = append(dst, s[i])
	}
	return dst
}

// rwEncoder writes Prometheus remote write 1.0 requests as Prometheus'
// queue manager does: one TimeSeries per sample, labels sorted.
type rwEncoder struct {
	targets map[int][][]prompb.Label
	names   map[int][]string
	req     prompb.WriteRequest
	smpl    []prompb.Sample
	raw     []byte
	n       int
	count   map[string]int64
}

func (e *rwEncoder) addTarget(id int, series []labels.Labels) error {
	if e.targets == nil {
		e.targets, e.names, e.count = map[int][][]prompb.Label{}, map[int][]string{}, map[string]int64{}
	}
	ls := make([][]prompb.Label, len(series))
	names := make([]string, len(series))
	for i, s := range series {
		s.Range(func(l labels.Label) { ls[i] = append(ls[i], prompb.Label{Name: l.Name, Value: l.Value}) })
		names[i] = s.Get(labels.MetricName)
	}
	e.targets[id], e.names[id] = ls, names
	return nil
}

func (e *rwEncoder) addRow(id int, row *workload.Row) error {
	ls, names := e.targets[id], e.names[id]
	for slot, v := range row.Values {
		if row.Present != nil && !row.Present[slot] {
			continue
		}
		e.smpl = append(e.smpl, prompb.Sample{Value: v, Timestamp: row.T})
		e.req.Timeseries = append(e.req.Timeseries, prompb.TimeSeries{Labels: ls[slot]})
		e.count[names[slot]]++
		e.n++
	}
	return nil
}

func (e *rwEncoder) samples() int { return e.n }

func (e *rwEncoder) flush() (body, error) {
	for i := range e.req.Timeseries {
		e.req.Timeseries[i].Samples = e.smpl[i : i+1 : i+1]
	}
	size := e.req.Size()
	if cap(e.raw) < size {
		e.raw = make([]byte, size)
	}
	n, err := e.req.MarshalToSizedBuffer(e.raw[:size])
	if err != nil {
		return body{}, err
	}
	b := body{data: snappy.Encode(nil, e.raw[size-n:size]), samples: e.n}
	e.req.Timeseries, e.smpl, e.n = e.req.Timeseries[:0], e.smpl[:0], 0
	return b, nil
}

func (e *rwEncoder) counts() map[string]int64 { return e.count }
