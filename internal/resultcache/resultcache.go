package resultcache

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/util/httputil"

	"github.com/aerie-db/aerie/internal/cache"
	"github.com/aerie-db/aerie/internal/mathx"
	"github.com/aerie-db/aerie/internal/queryparse"
	"github.com/aerie-db/aerie/internal/tsdb"
)

// Options configure the results cache. Zero values take the defaults in
// brackets.
type Options struct {
	// MaxFreshness: results at evaluation times within it of now are never
	// cached [10m].
	MaxFreshness time.Duration
	// SplitInterval: requests are split at multiples of it (UTC), each
	// part a cache key of its own [24h].
	SplitInterval time.Duration
	// LookbackDelta is the engine's default lookback [5m].
	LookbackDelta time.Duration
	// MinTime, if set, is the oldest time (ms) the storage still holds
	// (its retention): parts reading data before it are not cached.
	MinTime func() int64
	Now     func() time.Time // [time.Now]
	Logger  *slog.Logger
	// Registerer takes aerie_results_cache_* metrics [none].
	Registerer prometheus.Registerer
}

// Cache serves /api/v1/query_range through a cache.Cache, in front of the
// API handler next.
type Cache struct {
	next http.Handler
	c    *cache.Cache
	opts Options
	m    *metrics

	labels labelTable // the series of cached points, by hash

	mu  sync.Mutex // guards gen and reg, and orders Sets after invalidations
	gen uint64     // invalidations so far
	reg registry
}

// labelTable maps the label hashes cached points carry to the series'
// labels. It lives in memory, as the registry does (the cache starts
// empty at every start); when it reaches maxSeries it is emptied, and the
// parts whose series it lost become misses.
type labelTable struct {
	mu sync.Mutex // guards m
	m  map[uint64]labels.Labels
}

const maxSeries = 1 << 20

// maxEntries bounds the registry: parts cached (one per query and day).
var maxEntries = 1 << 18 // a variable for the test

func (t *labelTable) get(h uint64) (labels.Labels, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l, ok := t.m[h]
	return l, ok
}

// put records lset under h; false if h already names other labels.
func (t *labelTable) put(h uint64, lset labels.Labels) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.m[h]; ok {
		return labels.Equal(old, lset)
	}
	if t.m == nil || len(t.m) >= maxSeries {
		t.m = map[uint64]labels.Labels{}
	}
	t.m[h] = lset
	return true
}

// New returns a results cache storing into c in front of next (the
// Prometheus API handler, reached with rewritten query_range requests).
func New(next http.Handler, c *cache.Cache, opts Options) (*Cache, error) {
	if opts.MaxFreshness == 0 {
		opts.MaxFreshness = 10 * time.Minute
	}
	if opts.SplitInterval == 0 {
		opts.SplitInterval = 24 * time.Hour
	}
	if opts.LookbackDelta == 0 {
		opts.LookbackDelta = 5 * time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	return &Cache{next: next, c: c, opts: opts, m: m, reg: newRegistry()}, nil
}

// request is a parsed, cacheable query_range request.
type request struct {
	form        url.Values
	query       string // normalized
	expr        parser.Expr
	start, end  int64 // ms
	step        int64 // ms
	lookback    time.Duration
	selectors   [][]*labels.Matcher
	fingerprint string // everything but the time range
}

// parse reads a query_range request; ok is false for one the cache
// passes through (bad or unusual parameters, @ modifiers, negative
// offsets, rollup levels): Prometheus' handler answers those.
func (rc *Cache) parse(r *http.Request) (*request, bool) {
	if err := r.ParseForm(); err != nil {
		return nil, false
	}
	f := r.Form
	for k := range f {
		switch k {
		case "query", "start", "end", "step", "timeout", "lookback_delta":
		default:
			return nil, false // stats, rollup, limit, anything new: not cached
		}
	}
	start, err1 := parseTime(f.Get("start"))
	end, err2 := parseTime(f.Get("end"))
	step, err3 := parseStep(f.Get("step"))
	if err1 != nil || err2 != nil || err3 != nil || end < start || step <= 0 || (end-start)/step > 11000 {
		return nil, false
	}
	lookback := rc.opts.LookbackDelta
	if s := f.Get("lookback_delta"); s != "" {
		d, err := parseStep(s)
		if err != nil || d <= 0 {
			return nil, false
		}
		lookback = time.Duration(d) * time.Millisecond
	}
	expr, err := queryparse.ParseExpr(f.Get("query"))
	if err != nil {
		return nil, false
	}
	req := &request{form: f, expr: expr, query: expr.String(), start: start, end: end, step: step, lookback: lookback}
	cacheable := true
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			if n.Timestamp != nil || n.StartOrEnd != 0 || n.OriginalOffset < 0 || n.Smoothed {
				cacheable = false
			}
			req.selectors = append(req.selectors, n.LabelMatchers)
		case *parser.SubqueryExpr:
			if n.Timestamp != nil || n.StartOrEnd != 0 || n.OriginalOffset < 0 {
				cacheable = false
			}
		}
		return nil
	})
	if !cacheable {
		return nil, false
	}
	req.fingerprint = fmt.Sprintf("query_range\x00%s\x00step=%d\x00phase=%d\x00lookback=%d", req.query, step, mathx.FloorMod(start, step), lookback.Milliseconds())
	return req, true
}

// window is the data a range of evaluation times reads.
func (req *request) window(from, to int64) (int64, int64) {
	return promql.FindMinMaxTime(&parser.EvalStmt{
		Expr: req.expr, Start: time.UnixMilli(from), End: time.UnixMilli(to),
		Interval: time.Duration(req.step) * time.Millisecond, LookbackDelta: req.lookback,
	})
}

// part is one split of a request: its evaluation times [from, to] on the
// request's grid, and how much of it may be cached.
type part struct {
	key      cache.Key
	from, to int64 // grid points
	cacheTo  int64 // the last grid point that may be cached (< from: none)
	winLo    int64 // the data window of the whole split interval
	winHi    int64
	got      *cache.Result
	cached   *matrix // got's points
}

// ServeHTTP answers a query_range request from the cache and, for what it
// lacks, from next.
func (rc *Cache) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, ok := rc.parse(r)
	if !ok {
		rc.m.passed.Inc()
		rc.next.ServeHTTP(w, r)
		return
	}
	rc.mu.Lock()
	gen := rc.gen
	rc.mu.Unlock()

	horizon := rc.opts.Now().Add(-rc.opts.MaxFreshness).UnixMilli()
	minTime := int64(math.MinInt64)
	if rc.opts.MinTime != nil {
		minTime = rc.opts.MinTime()
	}
	split := rc.opts.SplitInterval.Milliseconds()
	var parts []*part
	for from := req.start; from <= req.end; {
		dayEnd := mathx.FloorDiv(from, split)*split + split - 1
		to := min(req.end, from+(dayEnd-from)/req.step*req.step)
		p := &part{from: from, to: to, cacheTo: min(to, req.start+mathx.FloorDiv(horizon-req.start, req.step)*req.step)}
		day := mathx.FloorDiv(from, split) * split
		p.winLo, p.winHi = req.window(day, day+split-1)
		if p.winLo < minTime {
			p.cacheTo = from - 1 // its data may be past the retention
		}
		p.key = cache.KeyOf(fmt.Sprintf("%s\x00day=%d", req.fingerprint, day))
		parts = append(parts, p)
		from = to + req.step
	}

	// What the cache has, and the gaps to ask next for.
	type gap struct{ from, to int64 }
	var gaps []gap
	addGap := func(from, to int64) {
		if from > to {
			return
		}
		if n := len(gaps); n > 0 && gaps[n-1].to+req.step == from {
			gaps[n-1].to = to
			return
		}
		gaps = append(gaps, gap{from, to})
	}
	for _, p := range parts {
		if p.cacheTo < p.from {
			addGap(p.from, p.to)
			continue
		}
		res, err := rc.c.Get(p.key, p.from, p.cacheTo, nil)
		if err != nil {
			rc.opts.Logger.Warn("results cache: get", "err", err)
			res.Status = cache.Miss
		}
		if res.Status != cache.Miss {
			p.cached = newMatrix()
			if !p.cached.addCached(&res, &rc.labels) {
				res.Status, p.cached = cache.Miss, nil // a series the label table lost
			}
		}
		switch res.Status {
		case cache.Hit:
			rc.m.hits.Inc()
			p.got = &res
			addGap(p.cacheTo+req.step, p.to)
		case cache.Partial:
			rc.m.partials.Inc()
			p.got = &res
			if res.Start == p.from { // head cached
				addGap(gridCeil(res.End+1, req.start, req.step), p.to)
			} else { // tail cached
				addGap(p.from, gridFloor(res.Start-1, req.start, req.step))
				addGap(p.cacheTo+req.step, p.to)
			}
		default:
			rc.m.misses.Inc()
			addGap(p.from, p.to)
		}
	}

	// Ask next for the gaps.
	out := newMatrix()
	var fetched []*matrix
	var warnings, infos []string
	// The answer's pieces, fetched and cached, are disjoint in time: merged
	// in time order, each series' points arrive sorted and appendJSON
	// need not sort them.
	type piece struct {
		from int64
		m    *matrix
	}
	var pieces []piece
	for _, g := range gaps {
		m, rec, err := rc.fetch(r, req, g.from, g.to)
		if err != nil {
			rc.opts.Logger.Warn("results cache: passing through", "err", err)
			rc.m.passed.Inc()
			rc.next.ServeHTTP(w, r)
			return
		}
		if rec != nil { // an error answer: the client gets it as next gave it
			copyResponse(w, rec)
			return
		}
		warnings, infos = append(warnings, m.warnings...), append(infos, m.infos...)
		fetched = append(fetched, m)
		pieces = append(pieces, piece{g.from, m})
	}
	for _, p := range parts {
		if p.cached != nil {
			pieces = append(pieces, piece{p.got.Start, p.cached})
		}
	}
	slices.SortFunc(pieces, func(a, b piece) int { return cmp.Compare(a.from, b.from) })
	for _, pc := range pieces {
		out.merge(pc.m)
	}

	// Store what may be cached, unless anything was invalidated since the
	// request began (its answers may predate the write).
	if len(warnings) == 0 && len(infos) == 0 {
		rc.store(req, parts, fetched, gen)
	}
	body := out.appendJSON(nil, warnings, infos)
	// compressed as the API compresses its own answers
	httputil.CompressionHandler{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	})}.ServeHTTP(w, r)
}

// fetch asks next for the request over grid points [from, to].
func (rc *Cache) fetch(r *http.Request, req *request, from, to int64) (*matrix, *httptest.ResponseRecorder, error) {
	f := url.Values{}
	for k, v := range req.form {
		f[k] = v
	}
	f.Set("start", formatTime(from))
	f.Set("end", formatTime(to))
	sub, err := http.NewRequestWithContext(r.Context(), http.MethodPost, r.URL.Path, strings.NewReader(f.Encode()))
	if err != nil {
		return nil, nil, err
	}
	sub.Header = r.Header.Clone()
	sub.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	sub.Header.Del("Content-Length")
	sub.Header.Del("Accept-Encoding") // the answer is parsed here; the client's is encoded by whoever serves it
	sub.ContentLength = int64(len(f.Encode()))
	sub.RequestURI = r.URL.Path
	rec := httptest.NewRecorder()
	rc.next.ServeHTTP(rec, sub)
	rc.m.downstream.Inc()
	if rec.Code != http.StatusOK {
		return nil, rec, nil
	}
	m, err := parseMatrix(rec.Body.Bytes())
	if err != nil {
		return nil, nil, err
	}
	return m, nil, nil
}

func copyResponse(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

// store sets the cacheable parts of what next answered.
func (rc *Cache) store(req *request, parts []*part, fetched []*matrix, gen uint64) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.gen != gen {
		rc.m.skipped.Inc()
		return
	}
	for _, m := range fetched {
		for _, s := range m.series {
			if !rc.labels.put(s.hash, s.lset) {
				return // two label sets of one hash: not cached
			}
		}
	}
	for _, p := range parts {
		// the cacheable range next answered for this part
		lo, hi := p.from, p.cacheTo
		if p.got != nil {
			if p.got.Status == cache.Hit {
				continue
			}
			if p.got.Start == p.from {
				lo = gridCeil(p.got.End+1, req.start, req.step)
			} else {
				hi = gridFloor(p.got.Start-1, req.start, req.step)
			}
		}
		if lo > hi {
			continue
		}
		var pts []cache.Point
		for _, m := range fetched {
			pts = m.appendPoints(pts, lo, hi)
		}
		if len(rc.reg.entries) >= maxEntries {
			// The registry forgets nothing on its own (an evicted part's
			// entry stays): when full, every registered part is dropped
			// with it, since a part it does not know could not be
			// invalidated.
			for k := range rc.reg.entries {
				rc.c.Delete(k)
			}
			rc.reg = newRegistry()
			rc.m.registryResets.Inc()
		}
		if err := rc.c.Set(p.key, lo, hi, []cache.Field{{Points: pts}}); err != nil {
			rc.opts.Logger.Debug("results cache: set", "err", err)
			continue
		}
		rc.reg.add(p.key, req.selectors, p.winLo, p.winHi)
	}
}

// Horizon is tsdb.LateObserver's: samples older than it may be in cached
// answers.
func (rc *Cache) Horizon() int64 {
	return rc.opts.Now().Add(-rc.opts.MaxFreshness).UnixMilli()
}

// Written drops the cached parts whose queries select a written series
// and read its range: the write made them stale.
func (rc *Cache) Written(ws []tsdb.LateWrite) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.gen++
	if rc.reg.empty() {
		return
	}
	for _, w := range ws {
		for _, k := range rc.reg.affected(w.Labels(), w.MinT, w.MaxT) {
			rc.c.Delete(k)
			rc.reg.remove(k)
			rc.m.invalidated.Inc()
		}
	}
}

// Deleted drops the cached parts reading [mint, maxt] of any series a
// selector of ms could match (every part whose window overlaps: a
// deletion is rare and its series are not at hand).
func (rc *Cache) Deleted(mint, maxt int64, _ []*labels.Matcher) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.gen++
	for _, k := range rc.reg.overlapping(mint, maxt) {
		rc.c.Delete(k)
		rc.reg.remove(k)
		rc.m.invalidated.Inc()
	}
}

// matrix is a query_range answer: series by their labels' hash, values
// as Prometheus wrote them.
type matrix struct {
	series   map[uint64]*series
	warnings []string
	infos    []string
}

type series struct {
	lset   labels.Labels
	hash   uint64
	points []sample
}

type sample struct {
	t int64
	v []byte // Prometheus' text of the value
}

func newMatrix() *matrix { return &matrix{series: map[uint64]*series{}} }

type apiResponse struct {
	Status string `json:"status"`
	Data   struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric     map[string]string `json:"metric"`
			Values     [][2]any          `json:"values"`
			Histograms json.RawMessage   `json:"histograms"`
		} `json:"result"`
	} `json:"data"`
	Warnings []string `json:"warnings"`
	Infos    []string `json:"infos"`
}

func parseMatrix(b []byte) (*matrix, error) {
	var resp apiResponse
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&resp); err != nil {
		return nil, fmt.Errorf("decode query_range answer: %w", err)
	}
	if resp.Status != "success" || resp.Data.ResultType != "matrix" {
		return nil, fmt.Errorf("query_range answer of status %q and type %q", resp.Status, resp.Data.ResultType)
	}
	m := newMatrix()
	m.warnings, m.infos = resp.Warnings, resp.Infos
	for _, s := range resp.Data.Result {
		if len(s.Histograms) > 0 {
			return nil, fmt.Errorf("native histograms are not cached")
		}
		lset := labels.FromMap(s.Metric)
		se := m.get(lset)
		for _, v := range s.Values {
			ts, ok1 := v[0].(json.Number)
			val, ok2 := v[1].(string)
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("sample %v of %s", v, lset)
			}
			t, err := parseTime(ts.String())
			if err != nil {
				return nil, err
			}
			se.points = append(se.points, sample{t, []byte(val)})
		}
	}
	return m, nil
}

func (m *matrix) get(lset labels.Labels) *series {
	h := lset.Hash()
	se := m.series[h]
	if se == nil {
		se = &series{lset: lset, hash: h}
		m.series[h] = se
	}
	return se
}

// merge adds the samples of o (from a disjoint range).
func (m *matrix) merge(o *matrix) {
	for _, s := range o.series {
		se := m.get(s.lset)
		se.points = append(se.points, s.points...)
	}
}

// addCached adds the points of a cache answer, their series looked up by
// hash in the label table; false if one is not there (the part is then a
// miss).
func (m *matrix) addCached(res *cache.Result, table *labelTable) bool {
	for _, f := range res.Fields {
		for _, p := range f.Points {
			if len(p.V) < 8 {
				return false
			}
			h := binary.LittleEndian.Uint64(p.V)
			se := m.series[h]
			if se == nil {
				lset, ok := table.get(h)
				if !ok {
					return false
				}
				se = &series{lset: lset, hash: h}
				m.series[h] = se
			}
			se.points = append(se.points, sample{p.T, p.V[8:]})
		}
	}
	return true
}

// appendPoints appends the points in [lo, hi] as cache points: the
// series' label hash and the value's text.
func (m *matrix) appendPoints(dst []cache.Point, lo, hi int64) []cache.Point {
	var arena []byte
	for _, s := range m.series {
		for _, p := range s.points {
			if p.t >= lo && p.t <= hi {
				a := len(arena)
				arena = binary.LittleEndian.AppendUint64(arena, s.hash)
				arena = append(arena, p.v...)
				dst = append(dst, cache.Point{T: p.t, V: arena[a:len(arena):len(arena)]})
			}
		}
	}
	return dst
}

// appendJSON writes the answer as Prometheus does: series sorted by their
// labels, samples by time.
func (m *matrix) appendJSON(dst []byte, warnings, infos []string) []byte {
	ss := make([]*series, 0, len(m.series))
	for _, s := range m.series {
		if len(s.points) > 0 {
			ss = append(ss, s)
		}
	}
	slices.SortFunc(ss, func(a, b *series) int { return labels.Compare(a.lset, b.lset) })
	dst = append(dst, `{"status":"success","data":{"resultType":"matrix","result":[`...)
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"metric":{`...)
		j := 0
		s.lset.Range(func(l labels.Label) {
			if j > 0 {
				dst = append(dst, ',')
			}
			j++
			dst = appendJSONString(dst, l.Name)
			dst = append(dst, ':')
			dst = appendJSONString(dst, l.Value)
		})
		dst = append(dst, `},"values":[`...)
		if cmpT := func(a, b sample) int { return cmp.Compare(a.t, b.t) }; !slices.IsSortedFunc(s.points, cmpT) {
			slices.SortFunc(s.points, cmpT)
		}
		for k, p := range s.points {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '[')
			dst = appendTime(dst, p.t)
			dst = append(dst, ',', '"')
			dst = append(dst, p.v...) // a number's text: nothing to escape
			dst = append(dst, '"', ']')
		}
		dst = append(dst, "]}"...)
	}
	dst = append(dst, "]}"...)
	for _, x := range []struct {
		name string
		v    []string
	}{{"warnings", warnings}, {"infos", infos}} {
		if len(x.v) > 0 {
			b, _ := json.Marshal(x.v)
			dst = append(dst, `,"`+x.name+`":`...)
			dst = append(dst, b...)
		}
	}
	return append(dst, '}')
}

// appendJSONString writes s as a JSON string as encoding/json does
// (escaping <, > and & too, as Prometheus' JSON does).
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// appendTime writes a timestamp in ms as Prometheus' JSON does: seconds,
// and the milliseconds as three digits when there are any.
func appendTime(dst []byte, t int64) []byte {
	if t < 0 {
		dst = append(dst, '-')
		t = -t
	}
	dst = strconv.AppendInt(dst, t/1000, 10)
	if ms := t % 1000; ms != 0 {
		dst = append(dst, '.')
		if ms < 100 {
			dst = append(dst, '0')
		}
		if ms < 10 {
			dst = append(dst, '0')
		}
		dst = strconv.AppendInt(dst, ms, 10)
	}
	return dst
}

// gridCeil is the first grid point (start + k·step) at or after t.
func gridCeil(t, start, step int64) int64 {
	return start + (mathx.FloorDiv(t-start+step-1, step))*step
}

// gridFloor is the last grid point at or before t.
func gridFloor(t, start, step int64) int64 {
	return start + mathx.FloorDiv(t-start, step)*step
}
