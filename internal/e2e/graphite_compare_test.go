package e2e

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The comparison engine of the Graphite differential test: graphite-web's
// and Aerie's answers to /render (format=json and format=raw) and to the
// find and tag APIs, decoded and compared value by value.

// graphiteTol is the relative tolerance of value comparisons (absolute
// below 1). Both servers compute in IEEE-754 doubles and whisper stores
// doubles, so the data are identical bit for bit; only the order of
// floating-point operations may differ (a running sum in movingAverage or
// integral against a fresh one, a mean as sum/n or as a weighted mean), and
// that costs a few ulps per operation: below 1e-13 relative over the
// windows' at most ~600 points. The data have 3 decimals, so any difference
// in meaning (a point in or out of a bucket, another aggregation) is larger
// than 1e-5 relative. 1e-9 sits between both by four orders of magnitude.
const graphiteTol = 1e-9

// gSeriesJSON is one series of a format=json answer.
type gSeriesJSON struct {
	Target string
	Tags   map[string]string
	Values []*float64 // nil: null
	Times  []int64
}

// gSeriesRaw is one series of a format=raw answer
// ("name,start,end,step|v1,v2,...").
type gSeriesRaw struct {
	Name             string
	Start, End, Step int64
	Values           []*float64
}

// gRender is one server's answer to one render case, in both formats.
type gRender struct {
	Status int    // of the json request (0: no answer)
	Err    string // transport error, or the body of a non-200 answer
	JSON   []gSeriesJSON
	Raw    []gSeriesRaw
	CSV    [][]string // format=csv rows (name, time, value), when asked
}

// nonNull counts the non-null points of the JSON answer.
func (r *gRender) nonNull() int {
	n := 0
	for _, s := range r.JSON {
		for _, v := range s.Values {
			if v != nil {
				n++
			}
		}
	}
	return n
}

// get200 fetches u. Unless the answer is a 200, errText says what went
// wrong, after prefix, for a gRender's or gFind's Err.
func get200(u, prefix string) (status int, body []byte, errText string) {
	status, body, err := getBytes(u)
	switch {
	case err != nil:
		return status, nil, prefix + err.Error()
	case status != http.StatusOK:
		return status, nil, fmt.Sprintf("%sHTTP %d: %.300s", prefix, status, body)
	}
	return status, body, ""
}

// fetchRender asks base's /render with query (format excluded) in json and
// raw, and in csv too when withCSV.
func fetchRender(base, query string, withCSV bool) *gRender {
	r := &gRender{}
	u := base + "/render?" + query + "&format="
	status, body, errText := get200(u+"json", "")
	if r.Status, r.Err = status, errText; r.Err != "" {
		return r
	}
	var err error
	if r.JSON, err = parseRenderJSON(body); err != nil {
		r.Err = "format=json: " + err.Error()
		return r
	}
	if _, body, r.Err = get200(u+"raw", "format=raw: "); r.Err != "" {
		return r
	}
	if r.Raw, err = parseRenderRaw(body); err != nil {
		r.Err = "format=raw: " + err.Error()
		return r
	}
	if !withCSV {
		return r
	}
	if _, body, r.Err = get200(u+"csv", "format=csv: "); r.Err != "" {
		return r
	}
	rows, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
	if err != nil {
		r.Err = "format=csv: " + err.Error()
		return r
	}
	if r.CSV = rows; r.CSV == nil {
		r.CSV = [][]string{}
	}
	return r
}

// diffCSV lists how got's csv rows (name, "YYYY-MM-DD HH:MM:SS", value or
// "" for null) differ from want's.
func diffCSV(want, got [][]string) []string {
	if len(want) != len(got) {
		return []string{fmt.Sprintf("csv: want %d rows, got %d", len(want), len(got))}
	}
	var out []string
	n := 0
	for i := range want {
		w, g := want[i], got[i]
		same := len(w) == 3 && len(g) == 3 && w[0] == g[0] && w[1] == g[1]
		if same && w[2] != g[2] {
			wv, werr := parseGraphiteFloat(w[2])
			gv, gerr := parseGraphiteFloat(g[2])
			same = w[2] != "" && g[2] != "" && werr == nil && gerr == nil && sameFloat(&wv, &gv)
		}
		if !same {
			if n++; n <= maxPointDiffs {
				out = append(out, fmt.Sprintf("csv row %d: want %q, got %q", i+1, w, g))
			}
		}
	}
	if n > maxPointDiffs {
		out = append(out, fmt.Sprintf("... %d csv rows differ in all", n))
	}
	return out
}

// parseRenderJSON decodes graphite-web's json format. A jsonp answer
// (cb(...)) is unwrapped; graphite-web writes an infinite value as 1e9999,
// which is decoded as ±Inf.
func parseRenderJSON(body []byte) ([]gSeriesJSON, error) {
	body = bytes.TrimSpace(body)
	if i := bytes.IndexByte(body, '('); i > 0 && body[0] != '[' && bytes.HasSuffix(body, []byte(")")) {
		body = body[i+1 : len(body)-1]
	}
	var raw []struct {
		Target     string              `json:"target"`
		Tags       map[string]string   `json:"tags"`
		Datapoints [][]json.RawMessage `json:"datapoints"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("%v in %.200q", err, body)
	}
	out := make([]gSeriesJSON, len(raw))
	for i, s := range raw {
		out[i] = gSeriesJSON{Target: s.Target, Tags: s.Tags}
		for j, p := range s.Datapoints {
			if len(p) != 2 {
				return nil, fmt.Errorf("series %q point %d: %d elements, want [value, timestamp]", s.Target, j, len(p))
			}
			ts, err := strconv.ParseInt(string(p[1]), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("series %q point %d: timestamp %q: %v", s.Target, j, p[1], err)
			}
			var v *float64
			if string(p[0]) != "null" {
				f, err := parseGraphiteFloat(string(p[0]))
				if err != nil {
					return nil, fmt.Errorf("series %q point %d: value: %v", s.Target, j, err)
				}
				v = &f
			}
			out[i].Values = append(out[i].Values, v)
			out[i].Times = append(out[i].Times, ts)
		}
	}
	return out, nil
}

func parseGraphiteFloat(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, err
	}
	return f, nil
}

// parseRenderRaw decodes format=raw: a line per series,
// "name,start,end,step|v1,...", None for null. The name may hold commas:
// the header is split from the right.
func parseRenderRaw(body []byte) ([]gSeriesRaw, error) {
	var out []gSeriesRaw
	for n, line := range strings.Split(strings.TrimRight(string(body), "\n"), "\n") {
		if line == "" {
			continue
		}
		bar := strings.LastIndexByte(line, '|')
		if bar < 0 {
			return nil, fmt.Errorf("line %d: no '|' in %.200q", n+1, line)
		}
		head, vals := line[:bar], line[bar+1:]
		var nums [3]int64
		for k := 2; k >= 0; k-- {
			c := strings.LastIndexByte(head, ',')
			if c < 0 {
				return nil, fmt.Errorf("line %d: header %.200q: want name,start,end,step", n+1, line[:bar])
			}
			v, err := strconv.ParseInt(head[c+1:], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: header %.200q: %v", n+1, line[:bar], err)
			}
			nums[k], head = v, head[:c]
		}
		s := gSeriesRaw{Name: head, Start: nums[0], End: nums[1], Step: nums[2]}
		if vals != "" {
			for i, f := range strings.Split(vals, ",") {
				if f == "None" {
					s.Values = append(s.Values, nil)
					continue
				}
				v, err := parseGraphiteFloat(f)
				if err != nil {
					return nil, fmt.Errorf("line %d value %d: %v", n+1, i, err)
				}
				s.Values = append(s.Values, &v)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

func sameFloat(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	x, y := *a, *b
	if math.IsNaN(x) || math.IsNaN(y) {
		return math.IsNaN(x) && math.IsNaN(y)
	}
	if math.IsInf(x, 0) || math.IsInf(y, 0) {
		return x == y
	}
	return math.Abs(x-y) <= graphiteTol*max(1, math.Abs(x), math.Abs(y))
}

func fmtFloat(v *float64) string {
	if v == nil {
		return "null"
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

// maxPointDiffs bounds the differing points listed per series.
const maxPointDiffs = 4

// diffValues lists the points where want and got differ, times[i] naming
// point i (nil: its index).
func diffValues(want, got []*float64, times func(i int) string) []string {
	var out []string
	n := 0
	for i := range max(len(want), len(got)) {
		var w, g *float64
		var wOK, gOK bool
		if i < len(want) {
			w, wOK = want[i], true
		}
		if i < len(got) {
			g, gOK = got[i], true
		}
		if wOK && gOK && sameFloat(w, g) {
			continue
		}
		n++
		if n <= maxPointDiffs {
			ws, gs := fmtFloat(w), fmtFloat(g)
			if !wOK {
				ws = "(none)"
			}
			if !gOK {
				gs = "(none)"
			}
			out = append(out, fmt.Sprintf("at %s: want %s, got %s", times(i), ws, gs))
		}
	}
	if n > maxPointDiffs {
		out = append(out, fmt.Sprintf("... %d points differ in all", n))
	}
	return out
}

// diffRender lists how got differs from want (graphite-web's answer); nil
// when they are equal within graphiteTol.
func diffRender(want, got *gRender) []string {
	if want.Err != "" || got.Err != "" {
		if want.Err != "" && got.Err != "" && want.Status/100 == got.Status/100 {
			return nil // both refuse the request the same way
		}
		return []string{fmt.Sprintf("status: want HTTP %d %s, got HTTP %d %s", want.Status, shorten(want.Err, 200), got.Status, shorten(got.Err, 200))}
	}
	var out []string
	// jsonValuesDiffer[name]: the json answer already lists that series'
	// value differences, which raw would repeat.
	jsonValuesDiffer := map[string]bool{}
	if len(want.JSON) != len(got.JSON) {
		out = append(out, fmt.Sprintf("json: want %d series %s, got %d %s", len(want.JSON), jsonNames(want.JSON), len(got.JSON), jsonNames(got.JSON)))
	} else {
		for i := range want.JSON {
			w, g := &want.JSON[i], &got.JSON[i]
			where := fmt.Sprintf("json series %d %q", i, w.Target)
			if w.Target != g.Target {
				out = append(out, fmt.Sprintf("json series %d: want target %q, got %q", i, w.Target, g.Target))
			}
			if !maps.Equal(w.Tags, g.Tags) {
				out = append(out, fmt.Sprintf("%s: want tags %s, got %s", where, labelString(w.Tags), labelString(g.Tags)))
			}
			if len(w.Times) != len(g.Times) || (len(w.Times) > 0 && (w.Times[0] != g.Times[0] || w.Times[len(w.Times)-1] != g.Times[len(g.Times)-1])) {
				out = append(out, fmt.Sprintf("%s: want %s, got %s", where, timeRange(w.Times), timeRange(g.Times)))
			} else if !slicesEqual(w.Times, g.Times) {
				out = append(out, fmt.Sprintf("%s: timestamps differ inside %s", where, timeRange(w.Times)))
			}
			for _, d := range diffValues(w.Values, g.Values, func(i int) string {
				if i < len(w.Times) {
					return strconv.FormatInt(w.Times[i], 10)
				}
				return fmt.Sprintf("index %d", i)
			}) {
				out = append(out, where+": "+d)
				jsonValuesDiffer[w.Target] = true
			}
		}
	}
	if want.CSV != nil || got.CSV != nil {
		out = append(out, diffCSV(want.CSV, got.CSV)...)
	}
	if len(want.Raw) != len(got.Raw) {
		out = append(out, fmt.Sprintf("raw: want %d series, got %d", len(want.Raw), len(got.Raw)))
		return out
	}
	for i := range want.Raw {
		w, g := &want.Raw[i], &got.Raw[i]
		where := fmt.Sprintf("raw series %d %q", i, w.Name)
		if w.Name != g.Name {
			out = append(out, fmt.Sprintf("raw series %d: want name %q, got %q", i, w.Name, g.Name))
		}
		if w.Start != g.Start || w.End != g.End || w.Step != g.Step {
			out = append(out, fmt.Sprintf("%s: want start,end,step %d,%d,%d, got %d,%d,%d", where, w.Start, w.End, w.Step, g.Start, g.End, g.Step))
			continue // the points of another grid say nothing more
		}
		d := diffValues(w.Values, g.Values, func(i int) string { return strconv.FormatInt(w.Start+int64(i)*w.Step, 10) })
		if len(d) > 0 && jsonValuesDiffer[w.Name] {
			out = append(out, where+": values differ as in json")
			continue
		}
		for _, d := range d {
			out = append(out, where+": "+d)
		}
	}
	if len(out) > maxRenderDiffs {
		out = append(out[:maxRenderDiffs], fmt.Sprintf("... %d differences in all", len(out)))
	}
	return out
}

// maxRenderDiffs bounds the differences listed per render case.
const maxRenderDiffs = 16

func slicesEqual(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func timeRange(ts []int64) string {
	switch len(ts) {
	case 0:
		return "no points"
	case 1:
		return fmt.Sprintf("1 point at %d", ts[0])
	}
	return fmt.Sprintf("%d points %d..%d step %d", len(ts), ts[0], ts[len(ts)-1], ts[1]-ts[0])
}

func jsonNames(ss []gSeriesJSON) string {
	var names []string
	for i, s := range ss {
		if i == 6 {
			names = append(names, fmt.Sprintf("... %d more", len(ss)-i))
			break
		}
		names = append(names, strconv.Quote(s.Target))
	}
	return "[" + strings.Join(names, " ") + "]"
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// gFind is one server's answer to a find, expand, index or tags query.
type gFind struct {
	Status int
	Err    string
	Value  any // the decoded JSON (numbers as float64)
}

func fetchFind(base, pathQuery string) *gFind {
	f := &gFind{}
	status, body, errText := get200(base+pathQuery, "")
	if f.Status, f.Err = status, errText; f.Err != "" {
		return f
	}
	if err := json.Unmarshal(body, &f.Value); err != nil {
		f.Err = fmt.Sprintf("not JSON (%v): %.300s", err, body)
	}
	return f
}

// diffFind lists how got differs from want.
func diffFind(want, got *gFind) []string {
	if want.Err != "" || got.Err != "" {
		if want.Err != "" && got.Err != "" && want.Status/100 == got.Status/100 {
			return nil
		}
		return []string{fmt.Sprintf("status: want HTTP %d %s, got HTTP %d %s", want.Status, shorten(want.Err, 200), got.Status, shorten(got.Err, 200))}
	}
	var out []string
	diffJSONValue("$", want.Value, got.Value, &out)
	if len(out) > 8 {
		out = append(out[:8], fmt.Sprintf("... %d differences in all", len(out)))
	}
	return out
}

// diffJSONValue compares two decoded JSON values: objects by key, arrays in
// order, numbers within graphiteTol, and appends the differences under
// path.
func diffJSONValue(path string, want, got any, out *[]string) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: want object %s, got %s", path, shorten(jsonString(want), 120), shorten(jsonString(got), 120)))
			return
		}
		keys := map[string]bool{}
		for k := range w {
			keys[k] = true
		}
		for k := range g {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			wv, wok := w[k]
			gv, gok := g[k]
			switch {
			case !gok:
				*out = append(*out, fmt.Sprintf("%s.%s: missing (want %s)", path, k, shorten(jsonString(wv), 120)))
			case !wok:
				*out = append(*out, fmt.Sprintf("%s.%s: unexpected %s", path, k, shorten(jsonString(gv), 120)))
			default:
				diffJSONValue(path+"."+k, wv, gv, out)
			}
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: want array %s, got %s", path, shorten(jsonString(want), 120), shorten(jsonString(got), 120)))
			return
		}
		if len(w) != len(g) {
			missing, extra := arrayDiff(w, g)
			*out = append(*out, fmt.Sprintf("%s: want %d elements, got %d; missing %s; unexpected %s", path, len(w), len(g), missing, extra))
			return
		}
		for i := range w {
			diffJSONValue(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], out)
		}
	case float64:
		g, ok := got.(float64)
		if !ok || !sameFloat(&w, &g) {
			*out = append(*out, fmt.Sprintf("%s: want %s, got %s", path, jsonString(want), shorten(jsonString(got), 120)))
		}
	default:
		if jsonString(want) != jsonString(got) {
			*out = append(*out, fmt.Sprintf("%s: want %s, got %s", path, shorten(jsonString(want), 120), shorten(jsonString(got), 120)))
		}
	}
}

// arrayDiff lists (at most 6 of) the elements of want missing from got and
// those of got not in want, as multisets.
func arrayDiff(want, got []any) (missing, extra string) {
	count := map[string]int{}
	for _, e := range got {
		count[jsonString(e)]++
	}
	list := func(xs []string) string {
		if len(xs) > 6 {
			xs = append(xs[:6], fmt.Sprintf("... %d in all", len(xs)))
		}
		return "[" + strings.Join(xs, " ") + "]"
	}
	var m, x []string
	for _, e := range want {
		k := jsonString(e)
		if count[k] > 0 {
			count[k]--
			continue
		}
		m = append(m, shorten(k, 120))
	}
	for _, e := range got {
		k := jsonString(e)
		if count[k] > 0 {
			count[k]--
			x = append(x, shorten(k, 120))
		}
	}
	return list(m), list(x)
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// TestGraphiteCompareEngine checks the decoders and the comparisons of the
// differential test on hand-made answers: what must be equal is, and each
// kind of difference is reported.
func TestGraphiteCompareEngine(t *testing.T) {
	raw, err := parseRenderRaw([]byte("sumSeries(a.b,c.d),100,130,10|1.5,None,1e+20\nx,100,100,10|\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 2 || raw[0].Name != "sumSeries(a.b,c.d)" || raw[0].Start != 100 || raw[0].End != 130 || raw[0].Step != 10 ||
		len(raw[0].Values) != 3 || *raw[0].Values[0] != 1.5 || raw[0].Values[1] != nil || *raw[0].Values[2] != 1e20 || len(raw[1].Values) != 0 {
		t.Fatalf("parseRenderRaw: %+v", raw)
	}
	for _, bad := range []string{"a|1", "a,1,2|1", "a,1,2,x|1", "a,1,2,3|1,zz"} {
		if _, err := parseRenderRaw([]byte(bad)); err == nil {
			t.Errorf("parseRenderRaw(%q): no error", bad)
		}
	}
	js, err := parseRenderJSON([]byte(`cb([{"target": "a;x=1", "tags": {"name": "a", "x": "1"}, "datapoints": [[null, 10], [2.5, 20], [1e9999, 30], [-1e9999, 40]]}])`))
	if err != nil {
		t.Fatal(err)
	}
	if len(js) != 1 || js[0].Target != "a;x=1" || js[0].Tags["x"] != "1" || len(js[0].Values) != 4 || js[0].Values[0] != nil ||
		*js[0].Values[1] != 2.5 || !math.IsInf(*js[0].Values[2], 1) || !math.IsInf(*js[0].Values[3], -1) || js[0].Times[3] != 40 {
		t.Fatalf("parseRenderJSON: %+v", js)
	}
	if _, err := parseRenderJSON([]byte(`[{"target": "a", "datapoints": [[1]]}]`)); err == nil {
		t.Error("parseRenderJSON: a one-element point gives no error")
	}

	f := func(v float64) *float64 { return &v }
	base := func() *gRender {
		return &gRender{
			Status: 200,
			JSON:   []gSeriesJSON{{Target: "a", Tags: map[string]string{"name": "a"}, Values: []*float64{f(1), nil, f(1e6)}, Times: []int64{10, 20, 30}}},
			Raw:    []gSeriesRaw{{Name: "a", Start: 10, End: 40, Step: 10, Values: []*float64{f(1), nil, f(1e6)}}},
		}
	}
	if d := diffRender(base(), base()); d != nil {
		t.Errorf("equal answers differ: %v", d)
	}
	within := base()
	within.JSON[0].Values[2] = f(1e6 * (1 + graphiteTol/2))
	within.Raw[0].Values[0] = f(1 + graphiteTol/2)
	if d := diffRender(base(), within); d != nil {
		t.Errorf("answers within the tolerance differ: %v", d)
	}
	for name, change := range map[string]func(r *gRender){
		"value":      func(r *gRender) { r.JSON[0].Values[0] = f(1 + 3*graphiteTol) },
		"raw value":  func(r *gRender) { r.Raw[0].Values[2] = f(1e6 + 1) },
		"null":       func(r *gRender) { r.JSON[0].Values[1] = f(0) },
		"not null":   func(r *gRender) { r.Raw[0].Values[0] = nil },
		"target":     func(r *gRender) { r.JSON[0].Target = "b" },
		"raw name":   func(r *gRender) { r.Raw[0].Name = "b" },
		"tags":       func(r *gRender) { r.JSON[0].Tags = map[string]string{"name": "a", "x": "y"} },
		"times":      func(r *gRender) { r.JSON[0].Times = []int64{10, 25, 30} },
		"first time": func(r *gRender) { r.JSON[0].Times = []int64{0, 20, 30} },
		"step":       func(r *gRender) { r.Raw[0].Step = 20 },
		"end":        func(r *gRender) { r.Raw[0].End = 30 },
		"extra point": func(r *gRender) {
			r.JSON[0].Values = append(r.JSON[0].Values, nil)
			r.JSON[0].Times = append(r.JSON[0].Times, 40)
		},
		"extra series": func(r *gRender) { r.JSON = append(r.JSON, r.JSON[0]) },
		"no raw":       func(r *gRender) { r.Raw = nil },
		"error":        func(r *gRender) { r.Status, r.Err = 400, "HTTP 400: unknown function" },
	} {
		got := base()
		change(got)
		if d := diffRender(base(), got); len(d) == 0 {
			t.Errorf("%s: no difference reported", name)
		}
	}
	withCSV := func() *gRender {
		r := base()
		r.CSV = [][]string{{"a", "2026-11-25 00:00:10", "1.0"}, {"a", "2026-11-25 00:00:20", ""}}
		return r
	}
	csvSame := withCSV()
	csvSame.CSV[0][2] = "1"
	if d := diffRender(withCSV(), csvSame); d != nil {
		t.Errorf("equal csv answers differ: %v", d)
	}
	for name, change := range map[string]func(r *gRender){
		"csv value":  func(r *gRender) { r.CSV[0][2] = "1.5" },
		"csv null":   func(r *gRender) { r.CSV[1][2] = "0" },
		"csv time":   func(r *gRender) { r.CSV[1][1] = "2026-11-25 00:00:30" },
		"csv rows":   func(r *gRender) { r.CSV = r.CSV[:1] },
		"csv absent": func(r *gRender) { r.CSV = nil },
	} {
		got := withCSV()
		change(got)
		if d := diffRender(withCSV(), got); len(d) == 0 {
			t.Errorf("%s: no difference reported", name)
		}
	}

	both400 := &gRender{Status: 400, Err: "bad"}
	if d := diffRender(both400, &gRender{Status: 400, Err: "other words"}); d != nil {
		t.Errorf("two 400 answers differ: %v", d)
	}
	if d := diffRender(both400, &gRender{Status: 500, Err: "boom"}); d == nil {
		t.Error("a 400 and a 500 do not differ")
	}

	var v1, v2 any
	if err := json.Unmarshal([]byte(`{"metrics": [{"path": "a.", "is_leaf": "0"}, {"path": "b", "n": 1}]}`), &v1); err != nil {
		t.Fatal(err)
	}
	for doc, want := range map[string]bool{
		`{"metrics": [{"path": "a.", "is_leaf": "0"}, {"path": "b", "n": 1.0000000000001}]}`: true,
		`{"metrics": [{"path": "b", "n": 1}, {"path": "a.", "is_leaf": "0"}]}`:               false,
		`{"metrics": [{"path": "a.", "is_leaf": "1"}, {"path": "b", "n": 1}]}`:               false,
		`{"metrics": [{"path": "a."}, {"path": "b", "n": 1}]}`:                               false,
		`{"metrics": [{"path": "a.", "is_leaf": "0"}, {"path": "b", "n": 2}]}`:               false,
		`{"metrics": [{"path": "a.", "is_leaf": "0"}]}`:                                      false,
		`{"metrics": [], "x": 1}`: false,
	} {
		if err := json.Unmarshal([]byte(doc), &v2); err != nil {
			t.Fatal(err)
		}
		d := diffFind(&gFind{Status: 200, Value: v1}, &gFind{Status: 200, Value: v2})
		if (len(d) == 0) != want {
			t.Errorf("diffFind against %s: %v, want equal=%v", doc, d, want)
		}
	}
}

func TestGraphiteArrayDiff(t *testing.T) {
	m, x := arrayDiff([]any{"a", "b", "c", "c"}, []any{"a", "c", "d", "e", "c", "c"})
	if m != `["b"]` || x != `["c" "d" "e"]` {
		t.Errorf("arrayDiff: missing %s, unexpected %s", m, x)
	}
}

// TestGraphiteNormalizers checks the rewrites of find answers that the
// differential test applies: _tagged entries go, completer answers are
// sorted by name then path, tag database ids go.
func TestGraphiteNormalizers(t *testing.T) {
	dec := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct {
		f       func(any) any
		in, out string
	}{
		{dropWhisperTagged, `[{"id": "_tagged", "leaf": 0}, {"id": "a", "leaf": 0}]`, `[{"id": "a", "leaf": 0}]`},
		{dropWhisperTagged, `["_tagged.36b.18c.36b1", "a.b", "_taggedx"]`, `["a.b", "_taggedx"]`},
		{dropWhisperTagged, `{"metrics": [{"path": "_tagged.", "name": "_tagged"}, {"path": "a.", "name": "a"}]}`, `{"metrics": [{"path": "a.", "name": "a"}]}`},
		{dropWhisperTagged, `{"results": ["_tagged"]}`, `{"results": []}`},
		{sortCompleter, `{"metrics": [{"path": "s.x.on", "name": "on"}, {"path": "s.b.on", "name": "on"}, {"path": "s.a.a", "name": "a"}]}`,
			`{"metrics": [{"path": "s.a.a", "name": "a"}, {"path": "s.b.on", "name": "on"}, {"path": "s.x.on", "name": "on"}]}`},
		{dropIDs, `{"tag": "host", "id": 45, "values": [{"value": "a", "count": 3, "id": 45}]}`, `{"tag": "host", "values": [{"value": "a", "count": 3}]}`},
	} {
		got := jsonString(c.f(dec(c.in)))
		if want := jsonString(dec(c.out)); got != want {
			t.Errorf("%s:\n got %s\nwant %s", c.in, got, want)
		}
	}
}

// FuzzParseRender feeds arbitrary bodies to the decoders of the servers'
// answers: no panic, and a raw answer that decodes re-encodes to a body
// that decodes to the same series.
func FuzzParseRender(f *testing.F) {
	f.Add([]byte("sumSeries(a.b,c.d),100,130,10|1.5,None,1e+20\n"))
	f.Add([]byte("x,100,100,10|\n"))
	f.Add([]byte(`[{"target": "a", "tags": {"name": "a"}, "datapoints": [[null, 10], [1e9999, 20]]}]`))
	f.Add([]byte(`cb([])`))
	f.Fuzz(func(t *testing.T, body []byte) {
		_, _ = parseRenderJSON(body)
		series, err := parseRenderRaw(body)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, s := range series {
			vals := make([]string, len(s.Values))
			for i, v := range s.Values {
				if v == nil {
					vals[i] = "None"
				} else {
					vals[i] = strconv.FormatFloat(*v, 'g', -1, 64)
				}
			}
			fmt.Fprintf(&b, "%s,%d,%d,%d|%s\n", s.Name, s.Start, s.End, s.Step, strings.Join(vals, ","))
		}
		again, err := parseRenderRaw([]byte(b.String()))
		if err != nil {
			t.Fatalf("re-encoded %q: %v", b.String(), err)
		}
		want := &gRender{Raw: series}
		got := &gRender{Raw: again}
		if d := diffRender(want, got); d != nil {
			t.Fatalf("round trip of %q: %v", body, d)
		}
	})
}
