package sensorbench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
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
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		g, w := got[n], want[n]
		if slices.Equal(g, w) {
			continue
		}
		for i := range max(len(g), len(w)) {
			if i >= len(g) || i >= len(w) || g[i] != w[i] {
				return fmt.Sprintf("%s: %d intervals, want %d; first difference at #%d: %s vs %s", n, len(g), len(w), i, ivAt(g, i), ivAt(w, i))
			}
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

// parseNativeSearch reads the JSON answer of /api/v1/sensor/search: per
// series, its labels and intervals, in Prometheus' envelope
// {"status":"success","data":[{"metric":{…},"intervals":[…]}]} (data may
// also be {"result":[…]}; labels may be under "labels").
func parseNativeSearch(b []byte) (map[string][]interval, error) {
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, fmt.Errorf("native search answer %q: %w", short(string(b)), err)
	}
	if env.Status != "" && env.Status != "success" {
		return nil, fmt.Errorf("native search: %s: %s", env.Status, env.Error)
	}
	type series struct {
		Metric    map[string]string `json:"metric"`
		Labels    map[string]string `json:"labels"`
		Intervals []interval        `json:"intervals"`
	}
	var list []series
	if err := json.Unmarshal(env.Data, &list); err != nil {
		var res struct {
			Result []series `json:"result"`
		}
		if err2 := json.Unmarshal(env.Data, &res); err2 != nil {
			return nil, fmt.Errorf("native search answer %q: %w", short(string(b)), err)
		}
		list = res.Result
	}
	out := map[string][]interval{}
	for _, s := range list {
		ls := s.Metric
		if ls == nil {
			ls = s.Labels
		}
		name := ls["__name__"]
		if name == "" {
			return nil, fmt.Errorf("native search answer: a series without __name__: %v", ls)
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

type promPoint struct {
	t int64 // ms
	v float64
}

// parsePromResult reads a Prometheus API answer of a vector or a matrix.
func parsePromResult(b []byte) ([]promSeries, error) {
	var resp struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  []any             `json:"value"`
				Values [][]any           `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		return nil, fmt.Errorf("answer %q: %w", short(string(b)), err)
	}
	if resp.Status != "success" {
		return nil, fmt.Errorf("%s: %s", resp.Status, resp.Error)
	}
	point := func(p []any) (promPoint, error) {
		if len(p) != 2 {
			return promPoint{}, fmt.Errorf("point %v", p)
		}
		ts, ok1 := p[0].(float64)
		vs, ok2 := p[1].(string)
		if !ok1 || !ok2 {
			return promPoint{}, fmt.Errorf("point %v", p)
		}
		v, err := strconv.ParseFloat(vs, 64)
		return promPoint{t: int64(math.Round(ts * 1000)), v: v}, err
	}
	var out []promSeries
	for _, r := range resp.Data.Result {
		s := promSeries{name: cmp.Or(r.Metric["__name__"], r.Metric["sensor"])}
		if r.Value != nil {
			p, err := point(r.Value)
			if err != nil {
				return nil, err
			}
			s.points = append(s.points, p)
		}
		for _, pv := range r.Values {
			p, err := point(pv)
			if err != nil {
				return nil, err
			}
			s.points = append(s.points, p)
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
	aerieMethod, aeriePath, aerieBody string
	promql                            string
	sensor                            string // "" for all sensors
}

// search runs the search phase on Aerie (a) and VictoriaMetrics (v): for
// each condition, every sensor through /search and through PromQL, then
// all sensors at once through /api/v1/sensor/search and PromQL. The first
// run of every query is unrecorded and its answers are checked against
// the data; then each query runs Repeats times per peer, the peers taking
// turns to go first.
func (r *runner) search(a, v *server) error {
	d := r.d
	from, to := d.Start, d.end()
	hours := int64(d.hours())
	// VictoriaMetrics evaluates at the end of each hour.
	vmStart, vmEnd := d.Start+hourMs, d.Start+hours*hourMs
	for _, c := range d.conditions() {
		for _, kind := range []string{"per sensor", "all sensors"} {
			var qs []searchQuery
			if kind == "per sensor" {
				for _, s := range d.Sensors {
					qs = append(qs, searchQuery{
						aerieMethod: http.MethodPost,
						aeriePath:   fmt.Sprintf("/search/%s/%d-%d/json", s.Name, from, to),
						aerieBody:   c.peregreen(),
						promql:      c.promql(s.Name, false),
						sensor:      s.Name,
					})
				}
			} else {
				match := `{__name__=~"sensor_.*"}`
				qs = append(qs, searchQuery{
					aerieMethod: http.MethodGet,
					aeriePath: "/api/v1/sensor/search?" + url.Values{"match[]": {match}, "start": {promTime(from)}, "end": {promTime(to)},
						"cond": {c.peregreen()}, "format": {"json"}}.Encode(),
					promql: c.promql(match, true),
				})
			}
			res := SearchResult{Query: kind, Condition: c.peregreen(), AerieURL: qs[0].aerieMethod + " " + qs[0].aeriePath, PromQL: qs[0].promql}
			if qs[0].aerieBody != "" {
				res.AerieURL += " with body " + strconv.Quote(qs[0].aerieBody)
			}
			runAerie := func(q searchQuery) (map[string][]interval, time.Duration, error) {
				var body *strings.Reader
				if q.aerieBody != "" {
					body = strings.NewReader(q.aerieBody)
				}
				var b []byte
				var dur time.Duration
				var err error
				if body != nil {
					b, dur, err = do(r.ctx, a, q.aerieMethod, q.aeriePath, "text/plain", body, int64(body.Len()))
				} else {
					b, dur, err = do(r.ctx, a, q.aerieMethod, q.aeriePath, "", nil, 0)
				}
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
			runVM := func(q searchQuery) (map[string][]interval, time.Duration, error) {
				form := url.Values{"query": {q.promql}, "start": {promTime(vmStart)}, "end": {promTime(vmEnd)}, "step": {"3600"}, "nocache": {"1"}}.Encode()
				b, dur, err := do(r.ctx, v, http.MethodPost, "/api/v1/query_range", "application/x-www-form-urlencoded", strings.NewReader(form), int64(len(form)))
				if err != nil {
					return nil, 0, err
				}
				m, err := vmIntervals(b)
				return m, dur, err
			}
			readsBefore, err := r.dataReads(a)
			if err != nil {
				return err
			}
			// Warm-up and checks.
			gotA, gotV := map[string][]interval{}, map[string][]interval{}
			for _, q := range qs {
				ma, _, err := runAerie(q)
				if err != nil {
					return err
				}
				mv, _, err := runVM(q)
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
			repeats := r.sc.Repeats
			if kind == "all sensors" {
				repeats = max(4*r.sc.Repeats, 10)
			}
			var la, lv []time.Duration
			for rep := range repeats {
				for _, q := range qs {
					order := []string{aerie, vm}
					if rep%2 == 1 {
						order = []string{vm, aerie}
					}
					for _, p := range order {
						if p == aerie {
							_, dur, err := runAerie(q)
							if err != nil {
								return err
							}
							la = append(la, dur)
						} else {
							_, dur, err := runVM(q)
							if err != nil {
								return err
							}
							lv = append(lv, dur)
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
			res.Aerie = latency(la)
			res.VM = latency(lv)
			if res.VM.MedianMs > 0 {
				res.Ratio = res.Aerie.MedianMs / res.VM.MedianMs
			}
			r.rep.Search = append(r.rep.Search, res)
			r.logf("search %-11s %-9s (%d intervals): aerie median %.3f ms p99 %.3f ms, vm median %.3f ms p99 %.3f ms: ratio %.3f; aerie read %+v",
				kind, c.name, res.Intervals, res.Aerie.MedianMs, res.Aerie.P99Ms, res.VM.MedianMs, res.VM.P99Ms, res.Ratio, res.AerieReads)
		}
	}
	return nil
}

// dataReads reads Aerie's counters of data reads.
func (r *runner) dataReads(a *server) (DataReads, error) {
	m, err := get(r.ctx, a, "/metrics")
	if err != nil {
		return DataReads{}, err
	}
	val := func(name string) int64 { v, _ := metricValue(m, name); return int64(v) }
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
	return Latency{MedianMs: ms(percentile(ds, 0.5)), P99Ms: ms(percentile(ds, 0.99))}
}

// percentile returns the q-quantile of ds by the nearest-rank method.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
