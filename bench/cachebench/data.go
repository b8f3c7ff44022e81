package cachebench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Measurement, Fields and the tag keys of the synthetic dataset: a
// sensor-like measurement (the paper's Sensor dataset: Intel Berkeley
// lab motes) with eight float fields.
const Measurement = "sensor"

// Fields are the measurement's fields.
var Fields = []string{"temperature", "humidity", "light", "voltage", "pressure", "co2", "noise", "battery"}

// FieldSets are the field lists a query asks for: each field alone, the
// climate pair, the first four and all eight.
var FieldSets = func() [][]string {
	var s [][]string
	for _, f := range Fields {
		s = append(s, []string{f})
	}
	return append(s, Fields[:2], Fields[:4], Fields)
}()

// Rooms is the number of values of the "room" tag (sensor i is in room
// i % Rooms).
const Rooms = 3

// Dataset is the synthetic data: Sensors series of the measurement, one
// point every Interval from Start (epoch seconds) for Span, every field
// present at every point. Values are a daily cycle plus noise from a hash
// of (sensor, field, step), rounded to 2 decimals, so every value is
// known without storing it.
type Dataset struct {
	Sensors  int
	Start    int64 // first point, epoch seconds
	Span     time.Duration
	Interval time.Duration
}

// datasetEnd is the fixed time after the last point of every dataset, so
// that a seed gives the same queries whenever the bench runs.
var datasetEnd = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

func newDataset(sc Scale) Dataset {
	return Dataset{Sensors: sc.Sensors, Start: datasetEnd - int64(sc.Span/time.Second), Span: sc.Span, Interval: sc.Interval}
}

// Steps is the number of points of a series.
func (d Dataset) Steps() int { return int(d.Span / d.Interval) }

// End is the time of the last point.
func (d Dataset) End() int64 { return d.Start + int64(d.Steps()-1)*d.step() }

func (d Dataset) step() int64 { return int64(d.Interval / time.Second) }

// Key is one cacheable query without its time range: a sensor and a
// field set.
type Key struct {
	Sensor int
	Fields []string
}

// Keys are every (sensor, field set) combination, sensor-major.
func (d Dataset) Keys() []Key {
	var ks []Key
	for s := range d.Sensors {
		for _, fs := range FieldSets {
			ks = append(ks, Key{Sensor: s, Fields: fs})
		}
	}
	return ks
}

func sensorName(s int) string { return fmt.Sprintf("s%03d", s) }

// Statement is the InfluxQL of k without its time range: the text the
// caches key on.
func (k Key) Statement() string {
	q := make([]string, len(k.Fields))
	for i, f := range k.Fields {
		q[i] = strconv.Quote(f)
	}
	return fmt.Sprintf(`SELECT %s FROM %q WHERE "sensor" = '%s'`, strings.Join(q, ","), Measurement, sensorName(k.Sensor))
}

// Range is the InfluxQL of k over [start, end] (seconds, inclusive).
func (k Key) Range(start, end int64) string {
	return fmt.Sprintf("%s AND time >= %ds AND time <= %ds", k.Statement(), start, end)
}

// value is field f's value of sensor s at step i.
func value(s, f, i int) float64 {
	phase := 2 * math.Pi * float64(i%1440) / 1440
	base := 20 + 10*float64(f) + 5*math.Sin(phase+float64(s))
	noise := float64(mix(uint64(s)<<40^uint64(f)<<32^uint64(i))%1000) / 1000
	return math.Round((base+noise)*100) / 100
}

// mix is SplitMix64's finaliser.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// formatValue is the canonical text of a value: the bytes every system
// delivers and every cache stores.
func formatValue(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// AppendLines appends the line protocol of sensor s's points at steps
// [from, to) to dst.
func (d Dataset) AppendLines(dst []byte, s, from, to int) []byte {
	for i := from; i < to; i++ {
		dst = fmt.Appendf(dst, "%s,sensor=%s,room=r%d ", Measurement, sensorName(s), s%Rooms)
		for f, name := range Fields {
			if f > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, name...)
			dst = append(dst, '=')
			dst = strconv.AppendFloat(dst, value(s, f, i), 'f', -1, 64)
		}
		dst = append(dst, ' ')
		dst = strconv.AppendInt(dst, d.Start+int64(i)*d.step(), 10)
		dst = append(dst, '\n')
	}
	return dst
}

// Expected is the answer to k over [start, end] computed from the
// generator.
func (d Dataset) Expected(k Key, start, end int64) Answer {
	a := make(Answer, len(k.Fields))
	first := max(0, (start-d.Start+d.step()-1)/d.step())
	last := min(int64(d.Steps()-1), (end-d.Start)/d.step())
	for j, name := range k.Fields {
		f := fieldIndex(name)
		a[j].Name = name
		for i := first; i <= last; i++ {
			a[j].Points = append(a[j].Points, Point{T: d.Start + i*d.step(), V: formatValue(value(k.Sensor, f, int(i)))})
		}
	}
	return a
}

func fieldIndex(name string) int {
	for i, f := range Fields {
		if f == name {
			return i
		}
	}
	panic("unknown field " + name)
}

// Bytes is the size of the whole dataset as the caches count it: per
// point of a field, 8 bytes of timestamp and the value's text.
func (d Dataset) Bytes() int64 {
	var n int64
	for s := range d.Sensors {
		for f := range Fields {
			for i := range d.Steps() {
				n += pointOverhead + int64(len(formatValue(value(s, f, i))))
			}
		}
	}
	return n
}

// pointOverhead is the bytes a point's timestamp counts for.
const pointOverhead = 8

// Point is one value of a field at time T (seconds).
type Point struct {
	T int64
	V string
}

// Column is one field's points in time order.
type Column struct {
	Name   string
	Points []Point
}

// Answer is a query's result: one column per field asked, in the order
// asked.
type Answer []Column

// Bytes is the answer's size: 8 bytes a point plus the values' text.
func (a Answer) Bytes() int64 {
	var n int64
	for _, c := range a {
		for _, p := range c.Points {
			n += pointOverhead + int64(len(p.V))
		}
	}
	return n
}

// Diff describes the first difference between a and b ("" if equal).
func (a Answer) Diff(b Answer) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%d fields, want %d", len(a), len(b))
	}
	for i := range a {
		if a[i].Name != b[i].Name {
			return fmt.Sprintf("field %d is %q, want %q", i, a[i].Name, b[i].Name)
		}
		pa, pb := a[i].Points, b[i].Points
		for j := range min(len(pa), len(pb)) {
			if pa[j] != pb[j] {
				return fmt.Sprintf("field %s point %d is %d=%s, want %d=%s", a[i].Name, j, pa[j].T, pa[j].V, pb[j].T, pb[j].V)
			}
		}
		if len(pa) != len(pb) {
			return fmt.Sprintf("field %s has %d points, want %d", a[i].Name, len(pa), len(pb))
		}
	}
	return ""
}

// cut returns the points of a within [start, end].
func (a Answer) cut(start, end int64) Answer {
	out := make(Answer, len(a))
	for i, c := range a {
		out[i].Name = c.Name
		for _, p := range c.Points {
			if p.T >= start && p.T <= end {
				out[i].Points = append(out[i].Points, p)
			}
		}
	}
	return out
}

// concat returns a's points followed by b's, field by field (a's range
// before b's).
func concat(a, b Answer) Answer {
	out := make(Answer, len(a))
	for i := range a {
		out[i].Name = a[i].Name
		out[i].Points = append(append(make([]Point, 0, len(a[i].Points)+len(b[i].Points)), a[i].Points...), b[i].Points...)
	}
	return out
}
