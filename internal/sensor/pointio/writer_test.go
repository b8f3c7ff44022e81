package pointio

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

func TestNewWriter(t *testing.T) {
	for _, tc := range []struct{ format, ctype string }{
		{"csv", "text/csv"},
		{"json", "application/json"},
		{"msgp", "application/msgpack"},
	} {
		w, err := NewWriter(tc.format, io.Discard)
		require.NoError(t, err)
		require.Equal(t, tc.ctype, w.ContentType())
	}
	_, err := NewWriter("xml", io.Discard)
	require.EqualError(t, err, `unknown output format "xml": want csv, json or msgp`)
}

var (
	s1 = labels.FromStrings("__name__", "s1", "site", "a")
	s2 = labels.FromStrings("__name__", "s2", "odd", "q\"\\\n,")
)

// TestWriterOutput pins the bytes of every shape in every format, with
// and without series framing.
func TestWriterOutput(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	points := func(w Writer) {
		w.Point(1, 2.5)
		w.Point(2, nan)
		w.Point(3, inf)
		w.Point(-4, -inf)
		w.Point(5, 1e21)
		w.Point(6, 1<<60)
		w.Point(7, 1e-7)
		w.Point(8, math.Copysign(0, -1))
	}
	rows := func(w Writer) {
		w.Row(1, []float64{0.5, 2})
		w.Row(2, []float64{nan, -inf})
	}
	intervals := func(w Writer) {
		w.Interval(1, 5)
		w.Interval(10, 20)
	}
	framed := func(items func(Writer)) func(Writer) {
		return func(w Writer) {
			w.BeginSeries(s1)
			items(w)
			w.EndSeries()
			w.BeginSeries(s2)
			w.EndSeries()
			w.BeginSeries(labels.EmptyLabels())
			items(w)
			w.EndSeries()
		}
	}
	const s2csv = `"{__name__=""s2"",odd=""q\""\\\n,""}"`
	for _, tc := range []struct {
		name   string
		format string
		layout *Layout
		calls  func(Writer)
		want   string
	}{
		{"csv points", "csv", nil, points,
			"1,2.5\n2,NaN\n3,+Inf\n-4,-Inf\n5,1e+21\n6,1152921504606846976\n7,1e-7\n8,-0\n"},
		{"csv rows", "csv", &Layout{Shape: Rows, Columns: []string{"min", "max"}}, rows,
			"t,min,max\n1,0.5,2\n2,NaN,-Inf\n"},
		{"csv rows quoted columns", "csv", &Layout{Shape: Rows, Columns: []string{"a,b", `"q"`, " p"}}, func(w Writer) { w.Row(1, []float64{1, 2, 3}) },
			"t,\"a,b\",\"\"\"q\"\"\",\" p\"\n1,1,2,3\n"},
		{"csv intervals", "csv", &Layout{Shape: Intervals}, intervals, "1,5\n10,20\n"},
		{"csv empty", "csv", nil, func(Writer) {}, ""},
		{"csv framed points", "csv", &Layout{Series: true}, framed(func(w Writer) { w.Point(1, 2.5) }),
			"\"{__name__=\"\"s1\"\",site=\"\"a\"\"}\",1,2.5\n{},1,2.5\n"},
		{"csv framed rows", "csv", &Layout{Shape: Rows, Columns: []string{"min"}, Series: true}, framed(func(w Writer) { w.Row(1, []float64{0.5}) }),
			"metric,t,min\n\"{__name__=\"\"s1\"\",site=\"\"a\"\"}\",1,0.5\n{},1,0.5\n"},
		{"csv framed intervals", "csv", &Layout{Shape: Intervals, Series: true}, func(w Writer) {
			w.BeginSeries(s2)
			w.Interval(1, 5)
			w.EndSeries()
		}, s2csv + ",1,5\n"},

		{"json points", "json", nil, points,
			`[{"t":1,"v":2.5},{"t":2,"v":"NaN"},{"t":3,"v":"+Inf"},{"t":-4,"v":"-Inf"},{"t":5,"v":1e+21},{"t":6,"v":1152921504606846976},{"t":7,"v":1e-7},{"t":8,"v":-0}]` + "\n"},
		{"json rows", "json", &Layout{Shape: Rows, Columns: []string{"min", "max"}}, rows,
			`[{"t":1,"min":0.5,"max":2},{"t":2,"min":"NaN","max":"-Inf"}]` + "\n"},
		{"json rows escaped columns", "json", &Layout{Shape: Rows, Columns: []string{`"q"`, "\x01"}}, func(w Writer) { w.Row(1, []float64{1, 2}) },
			`[{"t":1,"\"q\"":1,"\u0001":2}]` + "\n"},
		{"json intervals", "json", &Layout{Shape: Intervals}, intervals, `[{"from":1,"to":5},{"from":10,"to":20}]` + "\n"},
		{"json empty", "json", nil, func(Writer) {}, "[]\n"},
		{"json framed points", "json", &Layout{Series: true}, framed(func(w Writer) { w.Point(1, 2.5); w.Point(2, 3) }),
			`{"status":"success","data":[` +
				`{"metric":{"__name__":"s1","site":"a"},"points":[{"t":1,"v":2.5},{"t":2,"v":3}]},` +
				`{"metric":{"__name__":"s2","odd":"q\"\\\n,"},"points":[]},` +
				`{"metric":{},"points":[{"t":1,"v":2.5},{"t":2,"v":3}]}]}` + "\n"},
		{"json framed rows", "json", &Layout{Shape: Rows, Columns: []string{"min"}, Series: true}, func(w Writer) {
			w.BeginSeries(s1)
			w.Row(1, []float64{0.5})
			w.EndSeries()
		}, `{"status":"success","data":[{"metric":{"__name__":"s1","site":"a"},"rows":[{"t":1,"min":0.5}]}]}` + "\n"},
		{"json framed intervals", "json", &Layout{Shape: Intervals, Series: true}, func(w Writer) {
			w.BeginSeries(s1)
			w.Interval(1, 5)
			w.EndSeries()
		}, `{"status":"success","data":[{"metric":{"__name__":"s1","site":"a"},"intervals":[{"from":1,"to":5}]}]}` + "\n"},
		{"json framed empty", "json", &Layout{Series: true}, func(Writer) {}, `{"status":"success","data":[]}` + "\n"},

		{"msgp points", "msgp", nil, func(w Writer) { w.Point(1, 2.5); w.Point(-1000, nan) },
			mp(t, kv{"t", 1, "v", 2.5}, kv{"t", -1000, "v", nan})},
		{"msgp rows", "msgp", &Layout{Shape: Rows, Columns: []string{"min", "max"}}, rows,
			mp(t, kv{"t", 1, "min", 0.5, "max", 2.0}, kv{"t", 2, "min", nan, "max", -inf})},
		{"msgp intervals", "msgp", &Layout{Shape: Intervals}, intervals,
			mp(t, kv{"from", 1, "to", 5}, kv{"from", 10, "to", 20})},
		{"msgp empty", "msgp", nil, func(Writer) {}, ""},
		{"msgp framed points", "msgp", &Layout{Series: true}, framed(func(w Writer) { w.Point(1, 2.5) }),
			mp(t, kv{"metric", kv{"__name__", "s1", "site", "a"}}, kv{"t", 1, "v", 2.5},
				kv{"metric", kv{"__name__", "s2", "odd", "q\"\\\n,"}},
				kv{"metric", kv{}}, kv{"t", 1, "v", 2.5})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			w, err := NewWriter(tc.format, &b)
			require.NoError(t, err)
			if tc.layout != nil {
				require.NoError(t, w.Begin(*tc.layout))
			}
			tc.calls(w)
			require.NoError(t, w.Close())
			require.Equal(t, tc.want, b.String())
			require.NoError(t, w.Close(), "a second Close")

			// The same calls give the same bytes.
			var b2 bytes.Buffer
			w, _ = NewWriter(tc.format, &b2)
			if tc.layout != nil {
				w.Begin(*tc.layout)
			}
			tc.calls(w)
			w.Close()
			require.Equal(t, b.Bytes(), b2.Bytes())

			if tc.format == "json" {
				require.True(t, json.Valid(b.Bytes()), b.String())
			}
		})
	}
}

func TestWriterMisuse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		calls func(Writer) error
		err   string
	}{
		{"rows without columns", func(w Writer) error { return w.Begin(Layout{Shape: Rows}) }, "pointio: rows without columns"},
		{"empty column", func(w Writer) error { return w.Begin(Layout{Shape: Rows, Columns: []string{"a", ""}}) }, "pointio: an empty column name"},
		{"column t", func(w Writer) error { return w.Begin(Layout{Shape: Rows, Columns: []string{"t"}}) }, `pointio: column name "t" is reserved: t is the timestamp, metric the series' labels`},
		{"column metric", func(w Writer) error { return w.Begin(Layout{Shape: Rows, Columns: []string{"min", "metric"}}) }, `pointio: column name "metric" is reserved: t is the timestamp, metric the series' labels`},
		{"duplicate column", func(w Writer) error { return w.Begin(Layout{Shape: Rows, Columns: []string{"a", "a"}}) }, `pointio: column name "a" appears twice`},
		{"columns for points", func(w Writer) error { return w.Begin(Layout{Columns: []string{"a"}}) }, `pointio: columns ["a"] for shape points, which has none`},
		{"unknown shape", func(w Writer) error { return w.Begin(Layout{Shape: 7}) }, "pointio: unknown shape Shape(7)"},
		{"begin twice", func(w Writer) error { w.Begin(Layout{}); return w.Begin(Layout{}) }, "pointio: Begin after the answer has begun"},
		{"begin after a point", func(w Writer) error { w.Point(1, 1); return w.Begin(Layout{}) }, "pointio: Begin after the answer has begun"},
		{"row in points", func(w Writer) error { return w.Row(1, nil) }, "pointio: rows item in an answer of points"},
		{"interval in rows", func(w Writer) error {
			w.Begin(Layout{Shape: Rows, Columns: []string{"a"}})
			return w.Interval(1, 2)
		}, "pointio: intervals item in an answer of rows"},
		{"row of the wrong length", func(w Writer) error {
			w.Begin(Layout{Shape: Rows, Columns: []string{"a"}})
			return w.Row(1, []float64{1, 2})
		}, "pointio: row of 2 values for 1 columns"},
		{"series without framing", func(w Writer) error { return w.BeginSeries(s1) }, "pointio: BeginSeries without Layout.Series"},
		{"nested series", func(w Writer) error {
			w.Begin(Layout{Series: true})
			w.BeginSeries(s1)
			return w.BeginSeries(s1)
		}, "pointio: BeginSeries inside a series: call EndSeries first"},
		{"end without begin", func(w Writer) error { w.Begin(Layout{Series: true}); return w.EndSeries() }, "pointio: EndSeries without BeginSeries"},
		{"item outside a series", func(w Writer) error { w.Begin(Layout{Series: true}); return w.Point(1, 1) }, "pointio: points item outside a series: call BeginSeries first"},
		{"close inside a series", func(w Writer) error {
			w.Begin(Layout{Series: true})
			w.BeginSeries(s1)
			return w.Close()
		}, "pointio: Close inside a series: call EndSeries first"},
		{"point after close", func(w Writer) error { w.Close(); return w.Point(1, 1) }, "pointio: writer is closed"},
	} {
		for _, format := range []string{"csv", "json", "msgp"} {
			w, err := NewWriter(format, io.Discard)
			require.NoError(t, err)
			require.EqualError(t, tc.calls(w), tc.err, "%s %s", tc.name, format)
			require.EqualError(t, w.Flush(), tc.err, "sticky: %s %s", tc.name, format)
		}
	}
}

// failWriter fails every write after n bytes.
type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		n := f.n
		f.n = 0
		return n, io.ErrShortWrite
	}
	f.n -= len(p)
	return len(p), nil
}

func TestWriterStreams(t *testing.T) {
	for _, format := range []string{"csv", "json", "msgp"} {
		// Items go out as they are written, not at Close.
		var b bytes.Buffer
		w, err := NewWriter(format, &b)
		require.NoError(t, err)
		for i := range 10000 {
			require.NoError(t, w.Point(int64(i), float64(i)))
		}
		sent := b.Len()
		require.NoError(t, w.Flush())
		require.Less(t, b.Len()-sent, 32<<10, "%s: more than the bufio buffer held back", format)
		n := b.Len()
		require.NoError(t, w.Close())
		require.LessOrEqual(t, b.Len()-n, 2, format)

		// A failed write is sticky.
		w, err = NewWriter(format, &failWriter{n: 40 << 10})
		require.NoError(t, err)
		for i := 0; err == nil; i++ {
			require.Less(t, i, 100000)
			err = w.Point(int64(i), 1)
		}
		require.ErrorIs(t, err, io.ErrShortWrite)
		require.ErrorIs(t, w.Point(1, 1), io.ErrShortWrite)
		require.ErrorIs(t, w.Close(), io.ErrShortWrite)
	}
}

// randomPoints returns n points with values that stress the formats:
// integers, fractions of every magnitude, subnormals, ±0, ±Inf, NaNs with
// payloads, and values that fit typ.
func randomPoints(rng *rand.Rand, n int, typ Type) []pt {
	pts := make([]pt, n)
	for i := range pts {
		var v float64
		switch rng.IntN(10) {
		case 0:
			v = float64(rng.Int64N(1<<20) - 1<<19)
		case 1:
			v = float64(rng.Int64() >> rng.IntN(64)) // integers of every size within int64
		case 2:
			v = math.Float64frombits(rng.Uint64()) // anything, NaN payloads included
		case 3:
			v = []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64, 1e21, 1e-7, 1 << 53, 1<<53 + 2}[rng.IntN(12)]
		default:
			v = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20))
		}
		if fv, err := typ.Fit(v); err == nil {
			v = fv
		} else if typ.isInt() {
			lo, lim := typ.intRange()
			v = math.Trunc(math.Mod(math.Abs(v), lim-lo) + lo)
			if v, err = typ.Fit(v); err != nil {
				v = 0
			}
		} else {
			v = float64(float32(math.Mod(v, math.MaxFloat32)))
		}
		pts[i] = pt{T: rng.Int64() >> rng.IntN(64), V: v}
	}
	return pts
}

// TestRoundTrip: points written without framing read back the same
// (invariant 3), for every format and type.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, format := range []string{"csv", "json", "msgp"} {
		for _, typ := range []Type{Int8, Int16, Int32, Int64, Float32, Float64} {
			pts := randomPoints(rng, 5000, typ) // bodies over the readers' 64 KiB buffers
			var b bytes.Buffer
			w, err := NewWriter(format, &b)
			require.NoError(t, err)
			for _, p := range pts {
				if _, err := typ.Fit(p.V); err != nil {
					t.Fatalf("%s: a random value it does not hold: %v", typ, err)
				}
				if err := w.Point(p.T, p.V); err != nil {
					t.Fatal(err)
				}
			}
			require.NoError(t, w.Close())
			readFormat := "default"
			if format == "csv" {
				readFormat = "0-1-,"
			}
			readers := bodyReaders(b.String())
			delete(readers, "bytes") // slow under -race; the table tests read a byte at a time
			for how, r := range readers {
				got, err := readAll(t, format, readFormat, typ, r, Limits{})
				require.NoError(t, err, "%s %s %s", format, typ, how)
				requireSamePoints(t, pts, got, format == "msgp" && typ == Float64)
				for i := range pts {
					if got[i].Row != i+1 {
						t.Fatalf("%s %s %s: point %d has row %d", format, typ, how, i, got[i].Row)
					}
				}
			}
		}
	}
}

// TestRoundTripShapes reads rows, intervals and framed answers back with
// independent decoders: encoding/csv, encoding/json, the msgpack library.
func TestRoundTripShapes(t *testing.T) {
	type item struct {
		series string // labels text, "" without framing
		t      int64
		vals   []float64 // rows; intervals: {from, to} as float64
	}
	rng := rand.New(rand.NewPCG(3, 4))
	series := []labels.Labels{s1, s2, labels.FromStrings("__name__", "ü", "x", "\x00\t")}
	for _, format := range []string{"csv", "json", "msgp"} {
		for _, shape := range []Shape{Rows, Intervals} {
			for _, framed := range []bool{false, true} {
				name := format + " " + shape.String() + " framed=" + strconv.FormatBool(framed)
				l := Layout{Shape: shape, Series: framed}
				if shape == Rows {
					l.Columns = []string{"min", "max", "a,\"b"}
				}
				var want []item
				var b bytes.Buffer
				w, err := NewWriter(format, &b)
				require.NoError(t, err)
				require.NoError(t, w.Begin(l))
				nSeries := 1
				if framed {
					nSeries = len(series)
				}
				for s := range nSeries {
					var text string
					if framed {
						require.NoError(t, w.BeginSeries(series[s]))
						text = string(appendLabelsText(nil, series[s]))
					}
					for _, p := range randomPoints(rng, 50, Float64) {
						if shape == Rows {
							vs := []float64{p.V, -p.V, float64(p.T)}
							require.NoError(t, w.Row(p.T, vs))
							want = append(want, item{text, p.T, vs})
						} else {
							to := p.T + rng.Int64N(1000)
							require.NoError(t, w.Interval(p.T, to))
							want = append(want, item{text, p.T, []float64{float64(to)}})
						}
					}
					if framed {
						require.NoError(t, w.EndSeries())
					}
				}
				require.NoError(t, w.Close())

				var got []item
				switch format {
				case "csv":
					cr := csv.NewReader(&b)
					cr.FieldsPerRecord = -1
					recs, err := cr.ReadAll()
					require.NoError(t, err, name)
					if shape == Rows {
						head := append([]string{"t"}, l.Columns...)
						if framed {
							head = append([]string{"metric"}, head...)
						}
						require.Equal(t, head, recs[0], name)
						recs = recs[1:]
					}
					for _, rec := range recs {
						var it item
						if framed {
							it.series, rec = rec[0], rec[1:]
						}
						it.t, err = strconv.ParseInt(rec[0], 10, 64)
						require.NoError(t, err)
						for _, f := range rec[1:] {
							v, err := strconv.ParseFloat(f, 64)
							require.NoError(t, err, f)
							it.vals = append(it.vals, v)
						}
						got = append(got, it)
					}
				case "json":
					dec := json.NewDecoder(&b)
					dec.UseNumber()
					var items []map[string]any
					if framed {
						var doc struct {
							Status string
							Data   []map[string]json.RawMessage
						}
						require.NoError(t, dec.Decode(&doc), name)
						require.Equal(t, "success", doc.Status)
						for i, s := range doc.Data {
							var metric map[string]string
							require.NoError(t, json.Unmarshal(s["metric"], &metric))
							require.Equal(t, series[i].Map(), metric)
							var its []map[string]any
							d := json.NewDecoder(bytes.NewReader(s[shape.String()]))
							d.UseNumber()
							require.NoError(t, d.Decode(&its))
							for _, it := range its {
								it["series"] = string(appendLabelsText(nil, series[i]))
							}
							items = append(items, its...)
						}
					} else {
						require.NoError(t, dec.Decode(&items), name)
					}
					for _, m := range items {
						var it item
						it.series, _ = m["series"].(string)
						keys := append([]string{"t"}, l.Columns...)
						if shape == Intervals {
							keys = []string{"from", "to"}
						}
						n := len(keys)
						if framed {
							n++ // "series", added above
						}
						require.Len(t, m, n)
						var err error
						it.t, err = strconv.ParseInt(m[keys[0]].(json.Number).String(), 10, 64)
						require.NoError(t, err)
						for _, k := range keys[1:] {
							it.vals = append(it.vals, jsonValue(t, m[k]))
						}
						got = append(got, it)
					}
				case "msgp":
					dec := msgpack.NewDecoder(&b)
					dec.UseLooseInterfaceDecoding(true) // integers as int64 or uint64, floats as float64
					var text string
					for {
						var m map[string]any
						if err := dec.Decode(&m); err == io.EOF {
							break
						} else {
							require.NoError(t, err, name)
						}
						if md, ok := m["metric"]; ok {
							require.True(t, framed)
							ls := labels.NewScratchBuilder(0)
							for k, v := range md.(map[string]any) {
								ls.Add(k, v.(string))
							}
							ls.Sort()
							text = string(appendLabelsText(nil, ls.Labels()))
							continue
						}
						it := item{series: text}
						keys := append([]string{"t"}, l.Columns...)
						if shape == Intervals {
							keys = []string{"from", "to"}
						}
						require.Len(t, m, len(keys))
						for i, k := range keys {
							switch v := m[k].(type) {
							case float64:
								require.Positive(t, i)
								it.vals = append(it.vals, v)
							default:
								n := reflectInt(t, v)
								if i == 0 {
									it.t = n
								} else {
									require.Equal(t, Intervals, shape)
									it.vals = append(it.vals, float64(n))
								}
							}
						}
						got = append(got, it)
					}
				}
				require.Len(t, got, len(want), name)
				for i := range want {
					require.Equal(t, want[i].series, got[i].series, name)
					require.Equal(t, want[i].t, got[i].t, name)
					requireSamePoints(t, valsAsPoints(want[i].vals), valsAsPoints(got[i].vals), format == "msgp")
				}
			}
		}
	}
}

func valsAsPoints(vs []float64) []pt {
	pts := make([]pt, len(vs))
	for i, v := range vs {
		pts[i].V = v
	}
	return pts
}

// jsonValue reads a JSON number or one of the strings "NaN", "+Inf", "-Inf".
func jsonValue(t *testing.T, v any) float64 {
	t.Helper()
	switch v := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(v.String(), 64)
		require.NoError(t, err)
		return f
	case string:
		require.Contains(t, []string{"NaN", "+Inf", "-Inf"}, v)
		f, _ := strconv.ParseFloat(v, 64)
		return f
	}
	t.Fatalf("not a JSON value: %T %v", v, v)
	return 0
}

// reflectInt reads an integer of a loosely decoded msgp answer.
func reflectInt(t *testing.T, v any) int64 {
	t.Helper()
	switch v := v.(type) {
	case int64:
		return v
	case uint64:
		require.LessOrEqual(t, v, uint64(math.MaxInt64))
		return int64(v)
	}
	t.Fatalf("not an integer: %T %v", v, v)
	return 0
}

// TestLabelsText pins the Prometheus text form of labels.
func TestLabelsText(t *testing.T) {
	for _, tc := range []struct {
		ls   labels.Labels
		want string
	}{
		{labels.EmptyLabels(), "{}"},
		{s1, `{__name__="s1",site="a"}`},
		{s2, `{__name__="s2",odd="q\"\\\n,"}`},
		{labels.FromStrings("a.b", "1", "_x9", "2"), `{_x9="2","a.b"="1"}`},
	} {
		require.Equal(t, tc.want, string(appendLabelsText(nil, tc.ls)))
	}
}

func TestCSVField(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"min", "min"},
		{`{a="b"}`, `"{a=""b""}"`},
		{"a,b", `"a,b"`},
		{"a\nb", "\"a\nb\""},
		{" a", `" a"`},
		{"a\t", "\"a\t\""},
		{"a b", "a b"},
	} {
		require.Equal(t, tc.want, string(appendCSVField(nil, tc.in)), tc.in)
	}
}

// TestMsgpAppenders: the encoders write what the msgpack library writes
// in its compact form, and it reads them back.
func TestMsgpAppenders(t *testing.T) {
	var lib bytes.Buffer
	e := msgpack.NewEncoder(&lib)
	e.UseCompactInts(true)
	for _, i := range []int64{0, 1, 127, 128, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64,
		-1, -32, -33, -128, -129, -32768, -32769, math.MinInt32, math.MinInt32 - 1, math.MinInt64} {
		lib.Reset()
		require.NoError(t, e.EncodeInt(i))
		require.Equal(t, lib.Bytes(), appendMsgpInt(nil, i), "%d", i)
	}
	for _, n := range []int{0, 31, 32, 255, 256, 65535, 65536} {
		s := strings.Repeat("x", n)
		lib.Reset()
		require.NoError(t, e.EncodeString(s))
		require.Equal(t, lib.Bytes(), appendMsgpString(nil, s), "string of %d", n)
	}
	for _, n := range []int{0, 15, 16, 65535, 65536} {
		lib.Reset()
		require.NoError(t, e.EncodeMapLen(n))
		require.Equal(t, lib.Bytes(), appendMsgpMapLen(nil, n), "map of %d", n)
	}
	for _, v := range []float64{0, 2.5, math.Inf(-1), math.Float64frombits(0x7ff0000000000123)} {
		var got float64
		require.NoError(t, msgpack.Unmarshal(appendMsgpFloat(nil, v), &got))
		require.Equal(t, math.Float64bits(v), math.Float64bits(got))
	}
}

func TestWriterFlushError(t *testing.T) {
	for _, format := range []string{"csv", "json", "msgp"} {
		w, err := NewWriter(format, &failWriter{n: 3})
		require.NoError(t, err)
		require.NoError(t, w.Point(1, 2), "buffered")
		require.ErrorIs(t, w.Flush(), io.ErrShortWrite)
		require.ErrorIs(t, w.Close(), io.ErrShortWrite)
		require.ErrorIs(t, w.Begin(Layout{}), io.ErrShortWrite)
		require.ErrorIs(t, w.BeginSeries(s1), io.ErrShortWrite)
		require.ErrorIs(t, w.EndSeries(), io.ErrShortWrite)
	}
}
