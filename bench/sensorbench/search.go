package sensorbench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aerie-db/aerie/bench/harness"
)

// interval is a search answer's time range in ms, both ends inclusive.
type interval struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// condition is one search condition `min lte X & max gte Y` and the
// intervals every sensor should answer, from the generated data.
type condition struct {
	name   string // "selective" or "amplitude"
	x, y   float64
	expect map[string][]interval
}

func (c condition) peregreen() string {
	return "min lte " + fmtFloat(c.x) + " & max gte " + fmtFloat(c.y)
}

// promql returns the condition in PromQL over the series of selector,
// evaluated at the end of each hour: windows offset by 1 ms hold the
// samples of one aligned hour, [T−1h, T−1 ms], as Aerie's metric
// intervals do. Over many series, `and` would match them all with each
// other (binary operators ignore __name__, the sensors' only label), so
// the name is copied into a label to match on.
func (c condition) promql(selector string, many bool) string {
	if many {
		return fmt.Sprintf(`label_copy(min_over_time(%[1]s[1h] offset 1ms), "__name__", "sensor") <= %[2]s and on(sensor) label_copy(max_over_time(%[1]s[1h] offset 1ms), "__name__", "sensor") >= %[3]s`,
			selector, fmtFloat(c.x), fmtFloat(c.y))
	}
	return fmt.Sprintf("min_over_time(%[1]s[1h] offset 1ms) <= %[2]s and max_over_time(%[1]s[1h] offset 1ms) >= %[3]s", selector, fmtFloat(c.x), fmtFloat(c.y))
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// conditions returns the two conditions searched: Peregreen's amplitude
// search (its bounds cover every value, so every interval is read and
// answered) and a selective one, min at most the median of the hourly
// minima and max at least the median of the hourly maxima, with bounds
// half a resolution step off any value so that no comparison is a tie.
func (d *dataset) conditions() []condition {
	var mins, maxs []int32
	lo, hi := int32(math.MaxInt32), int32(math.MinInt32)
	for _, s := range d.Sensors {
		for _, h := range s.Hourly {
			mins, maxs = append(mins, h[0]), append(maxs, h[1])
			lo, hi = min(lo, h[0]), max(hi, h[1])
		}
	}
	slices.Sort(mins)
	slices.Sort(maxs)
	amp := condition{name: "amplitude", x: math.Ceil(value(hi) + 100), y: math.Floor(value(lo) - 100)}
	sel := condition{name: "selective", x: float64(2*mins[len(mins)/2]+1) / 200, y: float64(2*maxs[len(maxs)/2]-1) / 200}
	for _, c := range []*condition{&amp, &sel} {
		c.expect = map[string][]interval{}
		for _, s := range d.Sensors {
			var ivs []interval
			for h, mm := range s.Hourly {
				if value(mm[0]) <= c.x && value(mm[1]) >= c.y {
					ivs = addHour(ivs, d.Start+int64(h)*hourMs)
				}
			}
			if len(ivs) > 0 {
				c.expect[s.Name] = ivs
			}
		}
	}
	return []condition{amp, sel}
}

// addHour adds the hour from `from` to ivs, merging it with the last
// interval if adjacent.
func addHour(ivs []interval, from int64) []interval {
	if n := len(ivs); n > 0 && ivs[n-1].To == from-1 {
		ivs[n-1].To = from + hourMs - 1
		return ivs
	}
	return append(ivs, interval{from, from + hourMs - 1})
}

// sameIntervals compares answers by sensor; it returns "" or what
// differs first.
func sameIntervals(got, want map[string][]interval) string {
	names := slices.Collect(maps.Keys(want))
	for n := range got {
		if _, ok := want[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		g, w := got[n], want[n]
		i := 0
		for i < min(len(g), len(w)) && g[i] == w[i] {
			i++
		}
		if i < max(len(g), len(w)) {
			return fmt.Sprintf("%s: %d intervals, want %d; first difference at #%d: %s vs %s", n, len(g), len(w), i, ivAt(g, i), ivAt(w, i))
		}
	}
	return ""
}

func ivAt(ivs []interval, i int) string {
	if i >= len(ivs) {
		return "none"
	}
	return fmt.Sprintf("[%d, %d]", ivs[i].From, ivs[i].To)
}

func countIntervals(m map[string][]interval) int {
	n := 0
	for _, ivs := range m {
		n += len(ivs)
	}
	return n
}

// parseIntervals reads the JSON answer of /search: an array of
// {"from","to"}.
func parseIntervals(b []byte) ([]interval, error) {
	var ivs []interval
	if err := json.Unmarshal(b, &ivs); err != nil {
		return nil, fmt.Errorf("search answer %q: %w", short(string(b)), err)
	}
	return ivs, nil
}

// promData checks the envelope {"status","error","data"} of a Prometheus
// API answer (and of Aerie's native API) and decodes its data into v.
func promData(b []byte, v any) error {
	var env struct {
		Status, Error string
		Data          json.RawMessage
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return fmt.Errorf("answer %q: %w", short(string(b)), err)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s: %s", env.Status, env.Error)
	}
	if err := json.Unmarshal(env.Data, v); err != nil {
		return fmt.Errorf("answer %q: %w", short(string(b)), err)
	}
	return nil
}

// parseNativeSearch reads the JSON answer of /api/v1/sensor/search:
// {"status":"success","data":[{"metric":{…},"intervals":[…]}]}.
func parseNativeSearch(b []byte) (map[string][]interval, error) {
	var list []struct {
		Metric    map[string]string
		Intervals []interval
	}
	if err := promData(b, &list); err != nil {
		return nil, fmt.Errorf("native search: %w", err)
	}
	out := map[string][]interval{}
	for _, s := range list {
		name := s.Metric["__name__"]
		if name == "" {
			return nil, fmt.Errorf("native search answer: a series without __name__: %v", s.Metric)
		}
		if len(s.Intervals) > 0 {
			out[name] = append(out[name], s.Intervals...)
		}
	}
	return out, nil
}

// promSeries is one series of a Prometheus API answer.
type promSeries struct {
	name   string
	points []promPoint
}

// promPoint is a [seconds, "value"] pair of a Prometheus API answer.
type promPoint struct {
	t int64 // ms
	v float64
}

func (p *promPoint) UnmarshalJSON(b []byte) error {
	var pair []any
	if err := json.Unmarshal(b, &pair); err != nil {
		return err
	}
	if len(pair) != 2 {
		return fmt.Errorf("point %s", b)
	}
	ts, ok1 := pair[0].(float64)
	vs, ok2 := pair[1].(string)
	if !ok1 || !ok2 {
		return fmt.Errorf("point %s", b)
	}
	v, err := strconv.ParseFloat(vs, 64)
	p.t, p.v = int64(math.Round(ts*1000)), v
	return err
}

// parsePromResult reads a Prometheus API answer of a vector or a matrix.
func parsePromResult(b []byte) ([]promSeries, error) {
	var data struct {
		Result []struct {
			Metric map[string]string
			Value  *promPoint
			Values []promPoint
		}
	}
	if err := promData(b, &data); err != nil {
		return nil, err
	}
	var out []promSeries
	for _, r := range data.Result {
		s := promSeries{name: cmp.Or(r.Metric["__name__"], r.Metric["sensor"]), points: r.Values}
		if r.Value != nil {
			s.points = append([]promPoint{*r.Value}, s.points...)
		}
		out = append(out, s)
	}
	return out, nil
}

// vmIntervals turns the answer of a condition's PromQL into intervals:
// a point at T (a whole hour) means the hour before it, [T−1h, T−1 ms],
// met the condition (the windows are offset by 1 ms so that each holds
// the samples of one aligned hour, as Aerie's metric intervals do).
func vmIntervals(b []byte) (map[string][]interval, error) {
	res, err := parsePromResult(b)
	if err != nil {
		return nil, err
	}
	out := map[string][]interval{}
	for _, s := range res {
		if s.name == "" {
			return nil, fmt.Errorf("a series without __name__ in the answer")
		}
		for _, p := range s.points {
			out[s.name] = addHour(out[s.name], p.t-hourMs)
		}
	}
	return out, nil
}

// searchQuery is one request of a search kind on both peers.
type searchQuery struct {
	aeriePath, aerieBody string // a body: POST, else GET
	promql               string
	sensor               string // "" for all sensors
}

func (q searchQuery) aerieMethod() string {
	if q.aerieBody != "" {
		return http.MethodPost
	}
	return http.MethodGet
}

// search runs the search phase on Aerie (a) and VictoriaMetrics (v): for
// each condition, every sensor through /search and through PromQL, then
// all sensors at once through /api/v1/sensor/search and PromQL.
func (r *runner) search(a, v *harness.Peer) error {
	d := r.d
	from, to := d.Start, d.end()
	for _, c := range d.conditions() {
		var qs []searchQuery
		for _, s := range d.Sensors {
			qs = append(qs, searchQuery{aeriePath: fmt.Sprintf("/search/%s/%d-%d/json", s.Name, from, to), aerieBody: c.peregreen(), promql: c.promql(s.Name, false), sensor: s.Name})
		}
		if err := r.searchKind(a, v, c, "per sensor", qs, r.sc.Repeats); err != nil {
			return err
		}
		match := `{__name__=~"sensor_.*"}`
		all := searchQuery{promql: c.promql(match, true), aeriePath: "/api/v1/sensor/search?" + url.Values{"match[]": {match},
			"start": {promTime(from)}, "end": {promTime(to)}, "cond": {c.peregreen()}, "format": {"json"}}.Encode()}
		if err := r.searchKind(a, v, c, "all sensors", []searchQuery{all}, max(4*r.sc.Repeats, 10)); err != nil {
			return err
		}
	}
	return nil
}

// searchKind runs the queries of one kind of search: each once
// unrecorded, its answers checked against the data, then repeats times
// per peer, the peers taking turns to go first.
func (r *runner) searchKind(a, v *harness.Peer, c condition, kind string, qs []searchQuery, repeats int) error {
	res := SearchResult{Query: kind, Condition: c.peregreen(), AerieURL: qs[0].aerieMethod() + " " + qs[0].aeriePath, PromQL: qs[0].promql}
	if qs[0].aerieBody != "" {
		res.AerieURL += " with body " + strconv.Quote(qs[0].aerieBody)
	}
	readsBefore, err := r.dataReads(a)
	if err != nil {
		return err
	}
	// Warm-up and checks.
	gotA, gotV := map[string][]interval{}, map[string][]interval{}
	for _, q := range qs {
		ma, _, err := r.searchAerie(a, q)
		if err != nil {
			return err
		}
		mv, _, err := r.searchVM(v, q)
		if err != nil {
			return err
		}
		for n, ivs := range ma {
			gotA[n] = append(gotA[n], ivs...)
		}
		for n, ivs := range mv {
			gotV[n] = append(gotV[n], ivs...)
		}
	}
	if diff := sameIntervals(gotA, c.expect); diff != "" {
		return fmt.Errorf("%w: aerie %s search %q: %s", ErrMismatch, kind, c.peregreen(), diff)
	}
	if diff := sameIntervals(gotV, c.expect); diff != "" {
		return fmt.Errorf("%w: vm %s search %q: %s", ErrMismatch, kind, qs[0].promql, diff)
	}
	res.Intervals = countIntervals(c.expect)
	if res.Intervals == 0 {
		return fmt.Errorf("%w: search %q answers nothing on this data", ErrMismatch, c.peregreen())
	}
	var la, lv []time.Duration
	for rep := range repeats {
		for _, q := range qs {
			for i := range 2 {
				var dur time.Duration
				if (i+rep)%2 == 0 {
					_, dur, err = r.searchAerie(a, q)
					la = append(la, dur)
				} else {
					_, dur, err = r.searchVM(v, q)
					lv = append(lv, dur)
				}
				if err != nil {
					return err
				}
			}
		}
	}
	readsAfter, err := r.dataReads(a)
	if err != nil {
		return err
	}
	res.AerieReads = readsAfter.sub(readsBefore)
	res.Runs = len(la)
	res.Aerie, res.VM = latency(la), latency(lv)
	if res.VM.MedianMs > 0 {
		res.Ratio = res.Aerie.MedianMs / res.VM.MedianMs
	}
	r.rep.Search = append(r.rep.Search, res)
	r.logf("search %-11s %-9s (%d intervals): aerie median %.3f ms p99 %.3f ms, vm median %.3f ms p99 %.3f ms: ratio %.3f; aerie read %+v",
		kind, c.name, res.Intervals, res.Aerie.MedianMs, res.Aerie.P99Ms, res.VM.MedianMs, res.VM.P99Ms, res.Ratio, res.AerieReads)
	return nil
}

// searchAerie sends q to Aerie and returns its intervals by sensor.
func (r *runner) searchAerie(a *harness.Peer, q searchQuery) (map[string][]interval, time.Duration, error) {
	var body io.Reader // nil, not an empty reader, for a GET
	if q.aerieBody != "" {
		body = strings.NewReader(q.aerieBody)
	}
	b, dur, err := do(r.ctx, a, q.aerieMethod(), q.aeriePath, "text/plain", body, int64(len(q.aerieBody)))
	if err != nil {
		return nil, 0, err
	}
	if q.sensor == "" {
		m, err := parseNativeSearch(b)
		return m, dur, err
	}
	ivs, err := parseIntervals(b)
	m := map[string][]interval{}
	if len(ivs) > 0 {
		m[q.sensor] = ivs
	}
	return m, dur, err
}

// searchVM sends q's PromQL to VictoriaMetrics, evaluated at the end of
// each hour, and returns its intervals by sensor.
func (r *runner) searchVM(v *harness.Peer, q searchQuery) (map[string][]interval, time.Duration, error) {
	d := r.d
	form := url.Values{"query": {q.promql}, "start": {promTime(d.Start + hourMs)}, "end": {promTime(d.Start + int64(d.hours())*hourMs)}, "step": {"3600"}, "nocache": {"1"}}
	b, dur, err := postForm(r.ctx, v, "/api/v1/query_range", form)
	if err != nil {
		return nil, 0, err
	}
	m, err := vmIntervals(b)
	return m, dur, err
}

// dataReads reads Aerie's counters of data reads.
func (r *runner) dataReads(a *harness.Peer) (DataReads, error) {
	m, err := a.Get(r.ctx, "/metrics")
	if err != nil {
		return DataReads{}, err
	}
	val := func(name string) int64 { v, _ := harness.MetricValue(m, name); return int64(v) }
	return DataReads{
		BucketGets:      val("aerie_bucket_data_gets_total"),
		WindowCacheHits: val("aerie_bucket_window_cache_hits_total"),
		DataIntervals:   val("aerie_sensor_search_data_intervals_total"),
	}, nil
}

func (d DataReads) sub(o DataReads) DataReads {
	return DataReads{d.BucketGets - o.BucketGets, d.WindowCacheHits - o.WindowCacheHits, d.DataIntervals - o.DataIntervals}
}

func latency(ds []time.Duration) Latency {
	return Latency{MedianMs: harness.Ms(harness.Percentile(ds, 0.5)), P99Ms: harness.Ms(harness.Percentile(ds, 0.99))}
}
