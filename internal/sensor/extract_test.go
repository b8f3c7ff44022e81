package sensor

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/aerie-db/aerie/internal/sensor/pointio"
)

// row is an aggregation row as the test decodes it from any writer.
type row struct {
	t    int64
	vals map[string]float64
}

// decodeRows reads an aggregation answer of format f with its columns.
func decodeRows(t *testing.T, f, body string, cols []string) []row {
	t.Helper()
	var out []row
	switch f {
	case "csv":
		recs, err := csv.NewReader(strings.NewReader(body)).ReadAll()
		require.NoError(t, err)
		require.Equal(t, append([]string{"t"}, cols...), recs[0])
		for _, r := range recs[1:] {
			ts, err := strconv.ParseInt(r[0], 10, 64)
			require.NoError(t, err)
			x := row{t: ts, vals: map[string]float64{}}
			for i, c := range cols {
				x.vals[c], err = strconv.ParseFloat(r[i+1], 64)
				require.NoError(t, err)
			}
			out = append(out, x)
		}
	case "json":
		var ms []map[string]any
		require.NoError(t, json.Unmarshal([]byte(body), &ms))
		for _, m := range ms {
			x := row{t: int64(m["t"].(float64)), vals: map[string]float64{}}
			for _, c := range cols {
				x.vals[c] = m[c].(float64)
			}
			out = append(out, x)
		}
	case "msgp":
		d := msgpack.NewDecoder(bytes.NewReader([]byte(body)))
		d.UseLooseInterfaceDecoding(true) // integers as int64 or uint64, floats as float64
		for {
			var m map[string]any
			if err := d.Decode(&m); err == io.EOF {
				break
			} else {
				require.NoError(t, err)
			}
			x := row{vals: map[string]float64{}}
			x.t = toInt(m["t"])
			for _, c := range cols {
				x.vals[c] = toFloat(m[c])
			}
			out = append(out, x)
		}
	}
	return out
}

// toInt and toFloat read a number of a loosely decoded msgp answer.
func toInt(v any) int64 {
	if u, ok := v.(uint64); ok {
		return int64(u)
	}
	return v.(int64)
}

func toFloat(v any) float64 {
	if f, ok := v.(float64); ok {
		return f
	}
	return float64(toInt(v))
}

// decodePoints reads a points answer through pointio's reader, which the
// writers' output must round-trip through.
func decodePoints(t *testing.T, f, body string) []pt {
	t.Helper()
	format := "default"
	if f == "csv" {
		format = "0-1-,"
	}
	rd, err := pointio.NewReader(f, format, pointio.Float64, strings.NewReader(body), pointio.Limits{})
	require.NoError(t, err)
	var out []pt
	for rd.Next() {
		ts, v := rd.At()
		out = append(out, pt{ts, v})
	}
	require.NoError(t, rd.Err())
	return out
}

// TestExtract checks every mode and writer against answers computed from
// the raw points, and that aggregations over whole metric intervals read
// no block data.
func TestExtract(t *testing.T) {
	e := newEnv(t, Options{})
	rng := rand.New(rand.NewPCG(5, 6))
	pts, body := walk(rng, t0+7_000, 60_000, 30*60) // 30 h at 1 min
	e.upload("x", body)
	e.reopen(Options{})

	in := func(from, to int64) []pt {
		var out []pt
		for _, p := range pts {
			if p.t >= from && p.t <= to {
				out = append(out, p)
			}
		}
		return out
	}
	type rng2 struct{ from, to int64 }
	ranges := []rng2{
		{t0 + 2*hour, t0 + 26*hour - 1},                 // whole hours
		{t0 + 2*hour + 17_000, t0 + 25*hour + 5*60_000}, // ragged
	}
	for _, f := range []string{"csv", "json", "msgp"} {
		for _, r := range ranges {
			get := func(interval int64, fn string) string {
				t.Helper()
				code, body := e.do("GET", fmt.Sprintf("/extract/x/%d-%d/%d/%s/%s", r.from, r.to, interval, fn, f), "")
				require.Equal(t, http.StatusOK, code, body)
				return body
			}
			name := fmt.Sprintf("%s %d-%d", f, r.from-t0, r.to-t0)

			// Full.
			require.Equal(t, in(r.from, r.to), decodePoints(t, f, get(0, "none")), name)

			// Sampling: the first point of each 10-minute window from `from`.
			var want []pt
			last := int64(math.MinInt64)
			for _, p := range in(r.from, r.to) {
				if w := (p.t - r.from) / 600_000; w != last {
					want, last = append(want, p), w
				}
			}
			require.Equal(t, want, decodePoints(t, f, get(600_000, "none")), name)

			// Transformations.
			var tw []pt
			var win []float64
			for _, p := range in(r.from, r.to) {
				win = append(win, math.Abs(p.v-100)*2)
				if len(win) > 3 {
					win = win[1:]
				}
				s := 0.0
				for _, v := range win {
					s += v
				}
				tw = append(tw, pt{p.t, s / float64(len(win))})
			}
			got := decodePoints(t, f, get(0, "sub:100,abs,mul:2,movavg:3"))
			require.Len(t, got, len(tw), name)
			for i := range got {
				require.Equal(t, tw[i].t, got[i].t, name)
				require.InDelta(t, tw[i].v, got[i].v, 1e-9, name)
			}

			// Aggregation, hourly from `from`.
			cols := []string{"count", "min", "max", "avg", "sum", "stddev", "first", "last"}
			reads := e.db.BlockDataReads()
			rows := decodeRows(t, f, get(hour, strings.Join(cols, ",")), cols)
			if r.from%hour == 0 && (r.to+1)%hour == 0 {
				require.Equal(t, reads, e.db.BlockDataReads(), "%s: aggregation over whole metric intervals read data", name)
			}
			var wantRows []row
			for w := r.from; w <= r.to; w += hour {
				ps := in(w, min(w+hour-1, r.to))
				if len(ps) == 0 {
					continue
				}
				x := row{t: w, vals: map[string]float64{"count": float64(len(ps)), "min": math.Inf(1), "max": math.Inf(-1), "first": ps[0].v, "last": ps[len(ps)-1].v}}
				var sum, sq float64
				for _, p := range ps {
					x.vals["min"], x.vals["max"] = math.Min(x.vals["min"], p.v), math.Max(x.vals["max"], p.v)
					sum += p.v
				}
				mean := sum / float64(len(ps))
				for _, p := range ps {
					sq += (p.v - mean) * (p.v - mean)
				}
				x.vals["sum"], x.vals["avg"], x.vals["stddev"] = sum, mean, math.Sqrt(sq/float64(len(ps)))
				wantRows = append(wantRows, x)
			}
			require.Len(t, rows, len(wantRows), name)
			for i, w := range wantRows {
				require.Equal(t, w.t, rows[i].t, name)
				for _, c := range []string{"count", "min", "max", "first", "last"} {
					require.Equal(t, w.vals[c], rows[i].vals[c], "%s row %d %s", name, i, c)
				}
				for _, c := range []string{"sum", "avg", "stddev"} {
					require.InEpsilon(t, w.vals[c], rows[i].vals[c], 1e-6, "%s row %d %s", name, i, c)
				}
			}
		}
	}

	// Errors name what is wrong.
	for _, c := range []struct{ path, want string }{
		{"/extract/x/10-5/0/none/json", "before from"},
		{"/extract/x/0-5/-1/none/json", "interval"},
		{"/extract/x/0-5/0/nosuch/json", "function"},
		{"/extract/x/0-5/0/none/xml", "xml"},
		{"/extract/nosuch/0-5/0/none/json", "no data"},
	} {
		code, body := e.do("GET", c.path, "")
		require.GreaterOrEqual(t, code, 400, c.path)
		require.Less(t, code, 500, c.path)
		require.Contains(t, body, c.want, c.path)
	}
}
