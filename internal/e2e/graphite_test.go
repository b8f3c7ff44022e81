package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aerie-db/aerie/internal/graphite/graphitetest"
	"golang.org/x/sync/errgroup"
)

// The Graphite differential test (issue 14 §3): Debian's carbon-cache (with
// whisper) and graphite-web, started by graphitetest, and `aerie serve`
// get the same storage-schemas.conf and storage-aggregation.conf
// (testdata/graphite) and the same plaintext lines; then every render case
// of testdata/graphite/targets.txt (json and raw) and every query of
// finds.txt is asked of both and compared point by point (graphiteTol;
// format=csv too for the cases marked !csv). A difference passes only when
// allowedDifferences explains it; findNormalizers first remove what
// graphite-web itself does not keep the same between two instances.
//
// TestGraphiteSelfDifferential runs the same comparison between two
// graphite-web instances, so that the harness, the data and the table are
// known to give equal answers on equal systems: a case whose answer moves
// with the clock or with the order carbon wrote files in shows there.

const graphiteTestdata = "testdata/graphite"

// The data's time layout, relative to T (graphiteRun.tEnd, a multiple of
// 10 min, at most 10 min ago). Every series has 10 s points in (T-100m, T]; most
// have 1 min history in [T-10h, T-135m), which carbon writes straight into
// the 1 min archive (older than the 10 s archive's 2 h); apps.* also have
// 10 min history in [T-3d, T-13h), past their 1 min archive's 12 h.
const (
	gRecentPoints = 600 // 10 s points: 100 min
	gHist1mFrom   = 10 * 3600
	gHist1mTo     = 135 * 60
	gApps1mFrom   = 11 * 3600
	gApps10mFrom  = 3 * 86400
	gApps10mTo    = 13 * 3600
)

// gPoint is one plaintext line.
type gPoint struct {
	path string
	v    float64
	t    int64
}

// graphiteData generates the test's series, deterministically (a fixed
// seed; only the timestamps move with T), sorted by timestamp so that both
// servers see history first, as a live feed would have sent it.
func graphiteData(tEnd int64) []gPoint {
	rng := rand.New(rand.NewPCG(14, 2003))
	var pts []gPoint
	r3 := func(x float64) float64 { return math.Round(x*1000) / 1000 }
	add := func(path string, t int64, v float64) { pts = append(pts, gPoint{path, v, t}) }
	recentT := func(i int) int64 { return tEnd - 10*(gRecentPoints-1) + 10*int64(i) }
	// times lists a series' timestamps: 1 min history from histFrom (0:
	// none), then the 10 s points; i is the 10 s index or -1 in history.
	type stamp struct {
		t int64
		i int
	}
	times := func(histFrom int64) []stamp {
		var ts []stamp
		if histFrom > 0 {
			for t := tEnd - histFrom; t < tEnd-gHist1mTo; t += 60 {
				ts = append(ts, stamp{t, -1})
			}
		}
		for i := range gRecentPoints {
			ts = append(ts, stamp{recentT(i), i})
		}
		return ts
	}
	wave := func(t int64, k int) float64 { return math.Sin(float64(t-tEnd)/1200 + float64(k)) }

	// servers.<host>.cpu.{user,system,idle}: host03 has a 10 min gap,
	// host05 a stretch with 2 points a minute (below xFilesFactor 0.5) and
	// one with 4 (above), host06 is new (no history).
	hosts := []string{"db-1", "host01", "host02", "host03", "host04", "host05", "host06"}
	for k, h := range hosts {
		hist := int64(gHist1mFrom)
		if h == "host06" {
			hist = 0
		}
		for _, s := range times(hist) {
			i := s.i
			switch {
			case h == "host03" && i >= 200 && i < 260,
				h == "host05" && i >= 300 && i < 420 && i%3 != 0,
				h == "host05" && i >= 420 && i < 480 && i%3 == 0:
				continue
			}
			user := r3(max(0.5, 20+6*float64(k)+10*wave(s.t, k)+2*rng.NormFloat64()))
			system := r3(max(0.1, 4+float64(k)/2+2*wave(s.t, k+3)+0.5*rng.NormFloat64()))
			add("servers."+h+".cpu.user", s.t, user)
			add("servers."+h+".cpu.system", s.t, system)
			add("servers."+h+".cpu.idle", s.t, r3(100-user-system))
			if h == "host01" || h == "host02" || h == "host03" {
				used := math.Round(4e9 + float64(k)*1e8 + 1e7*wave(s.t, k))
				add("servers."+h+".mem.used", s.t, used)
				add("servers."+h+".mem.free", s.t, 16e9-used)
			}
		}
	}

	// apps.<app>.requests.{2xx,5xx}: counts per interval (sum);
	// hits_total: a counter (last) that web resets; latency.p99 (max) and
	// latency.min (min), with a gap in api's.
	for k, app := range []string{"web", "api", "db"} {
		// 10 min history, 1 min history, then 10 s points; scale turns a
		// rate per 10 s into a count per interval.
		type appStamp struct {
			t     int64
			i     int
			scale float64
		}
		var appTimes []appStamp
		for t := tEnd - gApps10mFrom; t < tEnd-gApps10mTo; t += 600 {
			appTimes = append(appTimes, appStamp{t, -1, 60})
		}
		for t := tEnd - gApps1mFrom; t < tEnd-gHist1mTo; t += 60 {
			appTimes = append(appTimes, appStamp{t, -1, 6})
		}
		for i := range gRecentPoints {
			appTimes = append(appTimes, appStamp{recentT(i), i, 1})
		}
		total := 1000.0 * float64(k+1)
		for _, s := range appTimes {
			ok := math.Round(max(0, s.scale*(50*float64(k+1)+20*wave(s.t, k)+5*rng.NormFloat64())))
			burst := 0.0
			if ((s.t-tEnd)/600%7+7)%7 == 3 {
				burst = 10
			}
			bad := math.Round(max(0, s.scale*(burst+2*rng.NormFloat64())))
			add("apps."+app+".requests.2xx", s.t, ok)
			add("apps."+app+".requests.5xx", s.t, bad)
			total += ok + bad
			if app == "web" && s.i == 350 {
				total = 0
			}
			add("apps."+app+".hits_total", s.t, total)
			if app == "api" && s.i >= 100 && s.i < 160 {
				continue
			}
			add("apps."+app+".latency.p99", s.t, r3(100+20*float64(k)+30*wave(s.t, k+1)+5*rng.NormFloat64()))
			add("apps."+app+".latency.min", s.t, r3(max(0.2, 5+float64(k)+rng.NormFloat64())))
		}
	}

	// Tagged series, 10 s only, tags in no particular order in the lines.
	tagged := []string{"disk.used;host=a;dc=x", "disk.used;dc=x;host=b", "disk.used;host=c;dc=y", "disk.free;host=a;dc=x", "net.rx;iface=eth0;host=a;dc=x", "net.rx;host=a;dc=x;iface=eth1"}
	for j, path := range tagged {
		for i := range gRecentPoints {
			if strings.HasPrefix(path, "disk.used;host=c") && i >= 400 && i < 450 {
				continue
			}
			t := recentT(i)
			var v float64
			switch {
			case strings.HasPrefix(path, "disk.free"):
				v = r3(200 - (50 + 5*wave(t, 0) + 0.01*float64(i)))
			case strings.HasPrefix(path, "disk."):
				v = r3(50 + 10*float64(j) + 5*wave(t, j) + 0.01*float64(i))
			default:
				v = r3(1000 + 100*float64(j) + 300*wave(t, j) + 20*rng.NormFloat64())
			}
			add(path, t, v)
		}
	}

	// sparse.{strict,lenient}.*: a point a minute (1/6 of the 10 s slots:
	// under xFilesFactor 0.5, over 0), 10 min on and 10 min off, and a
	// single point.
	for _, kind := range []string{"strict", "lenient"} {
		for _, s := range times(gHist1mFrom) {
			if s.i >= 0 && s.i%6 != 5 {
				continue
			}
			add("sparse."+kind+".every_minute", s.t, r3(10+wave(s.t, 2)))
		}
		for i := range gRecentPoints {
			if (i/60)%2 == 0 {
				add("sparse."+kind+".onoff", recentT(i), r3(3+wave(recentT(i), 4)+0.1*rng.NormFloat64()))
			}
		}
	}
	add("sparse.strict.single", recentT(300), 7.5)

	// gauges.temp.{x,y}: negative values and small decimals.
	for _, s := range times(gHist1mFrom) {
		add("gauges.temp.x", s.t, r3(-5+10*wave(s.t, 0)+rng.NormFloat64()))
		add("gauges.temp.y", s.t, r3(0.001*float64(s.t-tEnd)/10-0.3))
	}

	sort.SliceStable(pts, func(a, b int) bool { return pts[a].t < pts[b].t })
	return pts
}

// graphiteLines renders points as plaintext lines and lists their paths in
// first-seen order.
func graphiteLines(pts []gPoint) ([]byte, []string) {
	var b bytes.Buffer
	seen := map[string]bool{}
	var paths []string
	for _, p := range pts {
		b.WriteString(p.path)
		b.WriteByte(' ')
		b.WriteString(strconv.FormatFloat(p.v, 'f', -1, 64))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(p.t, 10))
		b.WriteByte('\n')
		if !seen[p.path] {
			seen[p.path] = true
			paths = append(paths, p.path)
		}
	}
	return b.Bytes(), paths
}

// renderCase is one line of targets.txt.
type renderCase struct {
	line      int
	window    string
	params    []string // "key=value", added to the query
	target    string
	wantEmpty bool
	csv       bool // compare format=csv too
}

var renderWindows = map[string]bool{"E": true, "R": true, "L": true, "W": true, "F": true, "N": true, "N3": true}

func (c renderCase) String() string {
	s := c.window + " " + c.target
	if len(c.params) > 0 {
		s += " &" + strings.Join(c.params, "&")
	}
	if c.csv {
		s += " !csv"
	}
	return s
}

// relative: the window depends on the time of the request.
func (c renderCase) relative() bool { return c.window == "N" || c.window == "N3" }

var tPlaceholder = regexp.MustCompile(`\{T-(\d+)([mhd])\}`)

// query is the case's /render query without format.
func (c renderCase) query(tEnd int64) string {
	q := url.Values{}
	atTime := func(t int64) string { return time.Unix(t, 0).UTC().Format("15:04_20060102") }
	switch c.window {
	case "R":
		q.Set("from", fmt.Sprint(tEnd-5400))
		q.Set("until", fmt.Sprint(tEnd))
	case "E":
		q.Set("from", fmt.Sprint(tEnd-95*60))
		q.Set("until", fmt.Sprint(tEnd-10*60))
	case "L":
		q.Set("from", fmt.Sprint(tEnd-36000))
		q.Set("until", fmt.Sprint(tEnd))
	case "W":
		q.Set("from", fmt.Sprint(tEnd-3*86400))
		q.Set("until", fmt.Sprint(tEnd))
	case "F":
		q.Set("from", atTime(tEnd-3600))
		q.Set("until", atTime(tEnd))
	case "N":
		q.Set("from", "-1h")
	case "N3":
		q.Set("from", "-3h")
		q.Set("until", "-1h")
	}
	target := tPlaceholder.ReplaceAllStringFunc(c.target, func(m string) string {
		sm := tPlaceholder.FindStringSubmatch(m)
		n, _ := strconv.ParseInt(sm[1], 10, 64)
		unit := map[string]int64{"m": 60, "h": 3600, "d": 86400}[sm[2]]
		return fmt.Sprint(tEnd - n*unit)
	})
	q.Add("target", target)
	for _, p := range c.params {
		k, v, _ := strings.Cut(p, "=")
		q.Add(k, v)
	}
	return q.Encode()
}

// loadRenderCases parses testdata/graphite/targets.txt.
func loadRenderCases(t *testing.T) []renderCase {
	t.Helper()
	f, err := os.Open(filepath.Join(graphiteTestdata, "targets.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []renderCase
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		c := renderCase{line: n}
		rest := line
		for first := true; ; first = false {
			tok, after, _ := strings.Cut(rest, " ")
			switch {
			case first:
				if !renderWindows[tok] {
					t.Fatalf("targets.txt:%d: unknown window %q", n, tok)
				}
				c.window = tok
			case strings.HasPrefix(tok, "&") && strings.Contains(tok, "="):
				c.params = append(c.params, tok[1:])
			case tok == "!empty":
				c.wantEmpty = true
			case tok == "!csv":
				c.csv = true
			default:
				c.target = rest
			}
			if c.target != "" {
				break
			}
			rest = strings.TrimSpace(after)
			if rest == "" {
				t.Fatalf("targets.txt:%d: no target", n)
			}
		}
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// loadFindQueries reads testdata/graphite/finds.txt.
func loadFindQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(graphiteTestdata, "finds.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var qs []string
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if !strings.HasPrefix(line, "/") {
			t.Fatalf("finds.txt:%d: %q is not a path", n+1, line)
		}
		qs = append(qs, line)
	}
	return qs
}

// allowedDiff is one known difference between graphite-web and Aerie that
// the test accepts, with why. adjustFind or adjustRender rewrite the
// answers (copies) into the form the difference is about; what remains
// must be equal, so an allowed difference never hides another.
type allowedDiff struct {
	id      string
	reason  string
	applies func(key string) bool // the case (renderCase.String()) or find query
	// adjustFind rewrites graphite-web's decoded JSON answer.
	adjustFind func(v any) any
	// adjustFindGot rewrites Aerie's decoded JSON answer.
	adjustFindGot func(v any) any
	// adjustRender rewrites both answers.
	adjustRender func(want, got *gRender)
}

// allowedDifferences lists every difference the test accepts.
var allowedDifferences = []allowedDiff{
	{
		id: "whisper-_tagged",
		reason: "graphite-web's whisper finder walks carbon's data directory, so find, expand and index.json list `_tagged`, " +
			"the directory where carbon keeps tagged series in files named by a hash of their path; that is whisper's storage layout, " +
			"not a metric namespace anybody wrote to (the tagged series are reached through seriesByTag and /tags)",
		applies:    func(key string) bool { return strings.HasPrefix(key, "/metrics/") },
		adjustFind: dropWhisperTagged,
	},
	{
		id: "aerie-tagged-paths",
		reason: "in Aerie a Graphite path is a series' __name__ whatever its tags (DESIGN.md §1), so the tagged series disk.used;host=a;… " +
			"are also nodes of the path tree (find, index.json list disk, disk.used, net.rx); graphite-web keeps tagged series out of it",
		applies:       func(key string) bool { return strings.HasPrefix(key, "/metrics/") },
		adjustFindGot: dropTaggedPaths,
	},
	{
		id: "graphite-web-constant-end",
		reason: "graphite-web's constantLine and threshold series end at until, while every other series (and Aerie's, all of them) " +
			"ends at start + points·step; format=raw shows that end, json (what Grafana reads) is the same",
		applies: func(key string) bool {
			return strings.Contains(key, "constantLine(") || strings.Contains(key, "threshold(")
		},
		adjustRender: func(want, got *gRender) {
			got.Raw = slices.Clone(got.Raw)
			for i := range got.Raw {
				if i < len(want.Raw) && got.Raw[i].Start == want.Raw[i].Start && got.Raw[i].Step == want.Raw[i].Step &&
					got.Raw[i].End == got.Raw[i].Start+int64(len(got.Raw[i].Values))*got.Raw[i].Step {
					got.Raw[i].End = want.Raw[i].End
				}
			}
		},
	},
}

// taggedPathNodes are the path-tree nodes that only the test's tagged
// series make in Aerie (no untagged series is under disk or net).
var taggedPathNodes = map[string]bool{"disk": true, "disk.used": true, "disk.free": true, "net": true, "net.rx": true}

// dropTaggedPaths removes the strings and objects naming taggedPathNodes
// from find, expand and index.json answers.
func dropTaggedPaths(v any) any {
	return dropPaths(v, func(p string) bool { return taggedPathNodes[p] })
}

// dropWhisperTagged removes the strings and objects naming _tagged paths
// from find, expand and index.json answers.
func dropWhisperTagged(v any) any {
	return dropPaths(v, func(p string) bool { return p == "_tagged" || strings.HasPrefix(p, "_tagged.") })
}

// dropPaths removes, from the lists in v, the path strings and the objects
// whose id or path (without its trailing dot) drop selects.
func dropPaths(v any, drop func(path string) bool) any {
	switch x := v.(type) {
	case []any:
		var out []any
		for _, e := range x {
			switch y := e.(type) {
			case string:
				if drop(y) {
					continue
				}
			case map[string]any:
				if id, ok := y["id"].(string); ok && drop(id) {
					continue
				}
				if p, ok := y["path"].(string); ok && drop(strings.TrimSuffix(p, ".")) {
					continue
				}
			}
			out = append(out, dropPaths(e, drop))
		}
		if out == nil {
			out = []any{}
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = dropPaths(e, drop)
		}
		return out
	}
	return v
}

// findNormalizers rewrite both answers of the find queries they apply to,
// before any comparison: they remove what graphite-web itself does not keep
// the same between two instances fed the same data
// (TestGraphiteSelfDifferential shows both).
var findNormalizers = []struct {
	id, reason string
	applies    func(query string) bool
	normalize  func(v any) any
}{
	{
		id: "completer-order",
		reason: "graphite-web sorts find results by node name only (metrics/views.py find_view: matches.sort(key=lambda node: node.name)); " +
			"nodes of the same name under different branches (sparse.strict.onoff, sparse.lenient.onoff) come in the finder's order, " +
			"which is that of the directory listing: both answers are sorted by (name, path)",
		applies:   func(q string) bool { return strings.Contains(q, "format=completer") },
		normalize: sortCompleter,
	},
	{
		id: "tag-db-ids",
		reason: "/tags and /tags/<tag> carry the row ids of graphite-web's tag database (sqlite autoincrement), " +
			"which depend on the order carbon's tagging batches arrived in: the ids are dropped from both answers",
		applies:   func(q string) bool { return strings.HasPrefix(q, "/tags") },
		normalize: dropIDs,
	},
}

// sortCompleter sorts the "metrics" of a completer answer by name, then
// path.
func sortCompleter(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	ms, ok := m["metrics"].([]any)
	if !ok {
		return v
	}
	sorted := append([]any(nil), ms...)
	key := func(e any) string {
		o, _ := e.(map[string]any)
		name, _ := o["name"].(string)
		path, _ := o["path"].(string)
		return name + "\x00" + path
	}
	sort.SliceStable(sorted, func(i, j int) bool { return key(sorted[i]) < key(sorted[j]) })
	out := make(map[string]any, len(m))
	for k, e := range m {
		out[k] = e
	}
	out["metrics"] = sorted
	return out
}

// dropIDs removes every "id" key from objects, recursively.
func dropIDs(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = dropIDs(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if k != "id" {
				out[k] = dropIDs(e)
			}
		}
		return out
	}
	return v
}

// graphitePeer is the server compared with graphite-web.
type graphitePeer struct {
	name string
	url  string
	send func([]byte) error
}

// parallel runs f(0..n-1) on workers goroutines.
func parallel(n, workers int, f func(i int)) {
	var g errgroup.Group
	g.SetLimit(workers)
	for i := range n {
		g.Go(func() error { f(i); return nil })
	}
	g.Wait()
}

// sendPlaintext writes data to a Graphite plaintext TCP listener.
func sendPlaintext(addr string, data []byte) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return err
	}
	if _, err := c.Write(data); err != nil {
		c.Close()
		return err
	}
	return c.Close()
}

// gProbes are the cases whose point counts say that a peer has stored all
// the data: every archive, every kind of series.
var gProbes = []string{
	"R servers.*.cpu.user", "L servers.*.cpu.user", "W apps.*.requests.2xx",
	"L apps.*.hits_total", "R seriesByTag('name=disk.used')", "L sparse.*.*", "R gauges.temp.*",
}

// graphiteRun is the data sent and graphite-web's answers, shared by the
// comparisons with a peer.
type graphiteRun struct {
	tEnd    int64
	cases   []renderCase
	finds   []string
	g       *graphitetest.Graphite
	renders []*gRender // graphite-web's answer to cases[i]
	findAns []*gFind
}

// startGraphiteRun starts graphite, sends it the data (and to the peers'
// senders, at the same time) and takes graphite-web's answers, checking
// that each case means something: no error, points exactly when the case
// does not say !empty.
func startGraphiteRun(t *testing.T, peers ...func([]byte) error) *graphiteRun {
	t.Helper()
	schemas, err := os.ReadFile(filepath.Join(graphiteTestdata, "storage-schemas.conf"))
	if err != nil {
		t.Fatal(err)
	}
	agg, err := os.ReadFile(filepath.Join(graphiteTestdata, "storage-aggregation.conf"))
	if err != nil {
		t.Fatal(err)
	}
	run := &graphiteRun{cases: loadRenderCases(t), finds: loadFindQueries(t)}
	if n := len(run.cases) + len(run.finds); n < 150 {
		t.Fatalf("%d render cases and find queries: the test is meant to compare at least 150", n)
	}
	start := time.Now()
	run.g = graphitetest.Start(t, graphitetest.Options{Schemas: string(schemas), Aggregation: string(agg)})
	t.Logf("%s started in %s", run.g.Versions, time.Since(start).Round(time.Millisecond))
	return run
}

// sendData generates the data for now and sends them to graphite and to
// each of sends.
func (run *graphiteRun) sendData(t *testing.T, sends ...func([]byte) error) {
	t.Helper()
	start := time.Now()
	run.tEnd = time.Now().Unix() / 600 * 600
	pts := graphiteData(run.tEnd)
	data, paths := graphiteLines(pts)
	errs := make([]error, len(sends)+1)
	parallel(len(sends)+1, len(sends)+1, func(i int) {
		if i == 0 {
			errs[i] = run.g.Send(data)
		} else {
			errs[i] = sends[i-1](data)
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("sending the data (to sender %d): %v", i, err)
		}
	}
	if err := run.g.Flush(paths, 90*time.Second); err != nil {
		t.Fatal(err)
	}
	t.Logf("T=%d (%s): %d points of %d series (%.1f MB) sent and written by carbon in %s",
		run.tEnd, time.Unix(run.tEnd, 0).UTC().Format(time.RFC3339), len(pts), len(paths), float64(len(data))/1e6, time.Since(start).Round(time.Millisecond))
}

// askGraphite takes graphite-web's answers to every case and query and
// checks that they mean something.
func (run *graphiteRun) askGraphite(t *testing.T) {
	t.Helper()
	start := time.Now()
	run.renders = make([]*gRender, len(run.cases))
	run.findAns = make([]*gFind, len(run.finds))
	parallel(len(run.cases)+len(run.finds), 4, func(i int) {
		if i < len(run.cases) {
			run.renders[i] = fetchRender(run.g.URL, run.cases[i].query(run.tEnd), run.cases[i].csv)
		} else {
			run.findAns[i-len(run.cases)] = fetchFind(run.g.URL, run.finds[i-len(run.cases)])
		}
	})
	for i, c := range run.cases {
		r := run.renders[i]
		switch {
		case r.Err != "":
			t.Errorf("targets.txt:%d %s: graphite-web: %s", c.line, c, r.Err)
		case c.wantEmpty && r.nonNull() > 0:
			t.Errorf("targets.txt:%d %s: graphite-web answers %d points, the case says !empty", c.line, c, r.nonNull())
		case !c.wantEmpty && r.nonNull() == 0:
			t.Errorf("targets.txt:%d %s: graphite-web answers no point (%d series): mark it !empty or fix it", c.line, c, len(r.JSON))
		case len(r.JSON) != len(r.Raw):
			t.Errorf("targets.txt:%d %s: graphite-web: %d series in json, %d in raw", c.line, c, len(r.JSON), len(r.Raw))
		}
	}
	for i, q := range run.finds {
		if f := run.findAns[i]; f.Err != "" {
			t.Errorf("finds.txt %s: graphite-web: %s", q, f.Err)
		}
	}
	t.Logf("graphite-web answered %d render cases (json and raw) and %d find queries in %s", len(run.cases), len(run.finds), time.Since(start).Round(time.Millisecond))
}

// waitPeer polls the probe cases until the peer answers as many points as
// graphite-web, or timeout.
func (run *graphiteRun) waitPeer(t *testing.T, peer graphitePeer, timeout time.Duration) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for _, key := range gProbes {
		i := slicesIndexFunc(run.cases, func(c renderCase) bool { return c.String() == key })
		if i < 0 {
			t.Fatalf("probe %q is not in targets.txt", key)
		}
		want := run.renders[i].nonNull()
		for {
			r := fetchRender(peer.url, run.cases[i].query(run.tEnd), false)
			if r.Err == "" && r.nonNull() >= want {
				break
			}
			if time.Now().After(deadline) {
				t.Logf("%s: after %s %s answers %d points of %q (graphite-web %d; %s): comparing anyway",
					peer.name, timeout, peer.name, r.nonNull(), key, want, shorten(r.Err, 200))
				return
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	t.Logf("%s answers the probes' %d cases with graphite-web's point counts after %s", peer.name, len(gProbes), time.Since(start).Round(time.Millisecond))
}

func slicesIndexFunc[T any](s []T, f func(T) bool) int {
	for i, v := range s {
		if f(v) {
			return i
		}
	}
	return -1
}

// gOutcome is the verdict on one case or query.
type gOutcome struct {
	key     string
	where   string // targets.txt:N or finds.txt
	query   string
	diffs   []string // unexpected differences (after every allowed adjustment)
	allowed string   // the allowedDifferences id that explained the difference
}

// compareWith asks the peer every case and query and compares its answers
// with graphite-web's.
func (run *graphiteRun) compareWith(t *testing.T, peer graphitePeer) {
	t.Helper()
	start := time.Now()
	n := len(run.cases) + len(run.finds)
	outcomes := make([]gOutcome, n)
	parallel(n, 4, func(i int) {
		if i < len(run.cases) {
			outcomes[i] = run.compareRender(peer, i)
		} else {
			outcomes[i] = run.compareFind(peer, i-len(run.cases))
		}
	})
	var equal, allowed, different int
	byAllowed := map[string]int{}
	for _, o := range outcomes {
		switch {
		case len(o.diffs) > 0:
			different++
			// The first line says it all: scripts/test.sh keeps only the
			// lines that name a _test.go file.
			t.Errorf("%s %s: %s differs from graphite-web: %s\n  query: %s\n  %s", o.where, o.key, peer.name, o.diffs[0], o.query, strings.Join(o.diffs[1:], "\n  "))
		case o.allowed != "":
			allowed++
			byAllowed[o.allowed]++
		default:
			equal++
		}
	}
	var ids []string
	for id, k := range byAllowed {
		ids = append(ids, fmt.Sprintf("%s: %d", id, k))
	}
	sort.Strings(ids)
	t.Logf("graphite-web vs %s: %d render targets (json and raw) and %d find queries compared in %s: %d equal, %d allowed differences %v, %d unexpected differences",
		peer.name, len(run.cases), len(run.finds), time.Since(start).Round(time.Millisecond), equal, allowed, ids, different)
}

func (run *graphiteRun) compareRender(peer graphitePeer, i int) gOutcome {
	c := run.cases[i]
	q := c.query(run.tEnd)
	o := gOutcome{key: c.String(), where: fmt.Sprintf("targets.txt:%d", c.line), query: "/render?" + q}
	want := run.renders[i]
	got := fetchRender(peer.url, q, c.csv)
	if c.relative() {
		// Relative windows move with the clock: ask graphite-web before
		// and after the peer until both of its answers agree.
		for try := 0; ; try++ {
			before := fetchRender(run.g.URL, q, c.csv)
			got = fetchRender(peer.url, q, c.csv)
			after := fetchRender(run.g.URL, q, c.csv)
			want = before
			if diffRender(before, after) == nil || try == 4 {
				break
			}
			time.Sleep(time.Second)
		}
	}
	o.diffs = diffRender(want, got)
	if len(o.diffs) == 0 {
		return o
	}
	for _, a := range allowedDifferences {
		if a.adjustRender == nil || !a.applies(o.key) {
			continue
		}
		w, g := *want, *got
		a.adjustRender(&w, &g)
		if d := diffRender(&w, &g); len(d) == 0 {
			o.diffs, o.allowed = nil, a.id
			return o
		}
	}
	return o
}

func (run *graphiteRun) compareFind(peer graphitePeer, i int) gOutcome {
	q := run.finds[i]
	o := gOutcome{key: q, where: "finds.txt", query: q}
	want := *run.findAns[i]
	got := fetchFind(peer.url, q)
	for _, n := range findNormalizers {
		if n.applies(q) {
			if want.Err == "" {
				want.Value = n.normalize(want.Value)
			}
			if got.Err == "" {
				got.Value = n.normalize(got.Value)
			}
		}
	}
	o.diffs = diffFind(&want, got)
	if len(o.diffs) == 0 {
		return o
	}
	w, g := want, *got
	var ids []string
	for _, a := range allowedDifferences {
		if (a.adjustFind == nil && a.adjustFindGot == nil) || !a.applies(q) || w.Err != "" || g.Err != "" {
			continue
		}
		if a.adjustFind != nil {
			w.Value = a.adjustFind(w.Value)
		}
		if a.adjustFindGot != nil {
			g.Value = a.adjustFindGot(g.Value)
		}
		ids = append(ids, a.id)
	}
	if len(ids) > 0 {
		if d := diffFind(&w, &g); len(d) == 0 {
			o.diffs, o.allowed = nil, strings.Join(ids, "+")
		} else {
			o.diffs = d
		}
	}
	return o
}

// aerieGraphiteConfig is Aerie's configuration for the test: the Graphite
// plaintext listener on a free port (the other listeners, on carbon's and
// statsd's fixed default ports, off: other tests run Aerie too), carbon's
// two files as its rollup rules, rolled up every 2 s instead of every
// minute so that the test does not wait for the default interval.
func aerieGraphiteConfig(plaintextPort int) (string, error) {
	schemas, err := filepath.Abs(filepath.Join(graphiteTestdata, "storage-schemas.conf"))
	if err != nil {
		return "", err
	}
	agg, err := filepath.Abs(filepath.Join(graphiteTestdata, "storage-aggregation.conf"))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(`aerie:
  graphite:
    plaintext_tcp: 127.0.0.1:%d
    plaintext_udp: ""
    pickle_tcp: ""
  statsd:
    udp: ""
    tcp: ""
  rollup:
    schemas_file: %s
    aggregation_file: %s
    interval: 2s
`, plaintextPort, schemas, agg), nil
}

// aerieGraphiteState returns what explains most differences: the head's
// time range, the samples that went to the backfill, how far each rollup
// level got, and the Graphite listeners' counters.
func aerieGraphiteState(base string) string {
	var b strings.Builder
	if status, body, err := getBytes(base + "/api/v1/status/tsdb"); err == nil && status == 200 {
		if i := bytes.Index(body, []byte(`"headStats"`)); i >= 0 {
			if j := bytes.IndexByte(body[i:], '}'); j >= 0 {
				b.Write(body[i : i+j+1])
				b.WriteByte('\n')
			}
		}
	}
	status, body, err := getBytes(base + "/metrics")
	if err != nil || status != 200 {
		return b.String() + fmt.Sprintf("/metrics: HTTP %d %v\n", status, err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "aerie_rollup_") || strings.HasPrefix(line, "aerie_backfill_") || strings.HasPrefix(line, "aerie_graphite_") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// TestGraphiteDifferential compares Aerie's Graphite API with Debian's
// graphite-web over carbon-cache, fed the same plaintext lines (see the top
// of this file). The graphite-web side is checked first on its own (each
// case answers, with points unless it says !empty), so the table means
// something even when `aerie serve` is not there.
func TestGraphiteDifferential(t *testing.T) {
	requireLong(t)
	start := time.Now()
	run := startGraphiteRun(t)

	aerieBuild.once.Do(func() { aerieBuild.path, aerieBuild.skipMsg = buildAerie() })
	var peer graphitePeer
	if aerieBuild.skipMsg == "" {
		g := newTestGroup(t)
		httpPort, linePort := mustFreePort(t), mustFreePort(t)
		cfg, err := aerieGraphiteConfig(linePort)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := startAerie(g, "aerie", aerieBuild.path, g.dataDir(t, "aerie"), httpPort, cfg); err != nil {
			t.Fatal(err)
		}
		lineAddr := fmt.Sprintf("127.0.0.1:%d", linePort)
		peer = graphitePeer{name: "Aerie", url: fmt.Sprintf("http://127.0.0.1:%d", httpPort), send: func(b []byte) error { return sendPlaintext(lineAddr, b) }}
		run.sendData(t, peer.send)
	} else {
		run.sendData(t)
	}
	run.askGraphite(t)
	if t.Failed() {
		t.FailNow()
	}
	if aerieBuild.skipMsg != "" {
		t.Skipf("graphite-web's side checked (%d cases, %d queries); %s", len(run.cases), len(run.finds), aerieBuild.skipMsg)
	}
	run.waitPeer(t, peer, 30*time.Second)
	run.compareWith(t, peer)
	if t.Failed() {
		t.Logf("Aerie's state after the comparison (T=%d):\n%s", run.tEnd, aerieGraphiteState(peer.url))
	}
	t.Logf("total %s", time.Since(start).Round(time.Millisecond))
}

// TestGraphiteSelfDifferential runs the comparison between two graphite-web
// and carbon-cache pairs fed the same lines: everything must be equal, with
// no allowed difference used. It checks the harness (data sent, carbon's
// cache written, relative windows asked again) and the comparison engine on
// the real thing, whatever state Aerie is in.
func TestGraphiteSelfDifferential(t *testing.T) {
	requireLong(t)
	run := startGraphiteRun(t)
	schemas, _ := os.ReadFile(filepath.Join(graphiteTestdata, "storage-schemas.conf"))
	agg, _ := os.ReadFile(filepath.Join(graphiteTestdata, "storage-aggregation.conf"))
	other := graphitetest.Start(t, graphitetest.Options{Schemas: string(schemas), Aggregation: string(agg)})
	run.sendData(t, other.Send)
	_, paths := graphiteLines(graphiteData(run.tEnd))
	if err := other.Flush(paths, 90*time.Second); err != nil {
		t.Fatal(err)
	}
	run.askGraphite(t)
	if t.Failed() {
		t.FailNow()
	}
	saved := allowedDifferences
	allowedDifferences = nil
	defer func() { allowedDifferences = saved }()
	run.compareWith(t, graphitePeer{name: "another graphite-web", url: other.URL})
}

// TestGraphiteData checks the generated data: deterministic, sorted by
// time, on the archives' grids, inside the layout the windows assume, and
// the same for every T but for the timestamps.
func TestGraphiteData(t *testing.T) {
	const tEnd = 1795566000
	a, pathsA := graphiteLines(graphiteData(tEnd))
	b, _ := graphiteLines(graphiteData(tEnd))
	if !bytes.Equal(a, b) {
		t.Fatal("graphiteData is not deterministic")
	}
	pts := graphiteData(tEnd)
	if len(pathsA) != 55 {
		t.Errorf("%d series, want 55", len(pathsA))
	}
	for i, p := range pts {
		if i > 0 && p.t < pts[i-1].t {
			t.Fatalf("point %d (%s at %d) before point %d (%d)", i, p.path, p.t, i-1, pts[i-1].t)
		}
		age := tEnd - p.t
		switch {
		case age < 0:
			t.Errorf("%s at %d: after T", p.path, p.t)
		case age < 100*60:
			if p.t%10 != 0 {
				t.Errorf("%s at %d: not on the 10 s grid", p.path, p.t)
			}
		case age <= gHist1mTo:
			t.Errorf("%s at T-%ds: in the gap between 10 s data and history", p.path, age)
		case age <= gApps10mTo:
			if p.t%60 != 0 || age > gApps1mFrom {
				t.Errorf("%s at T-%ds: not 1 min history", p.path, age)
			}
		default:
			if p.t%600 != 0 || age > gApps10mFrom || !strings.HasPrefix(p.path, "apps.") {
				t.Errorf("%s at T-%ds: not 10 min history of apps", p.path, age)
			}
		}
		if math.IsNaN(p.v) || math.IsInf(p.v, 0) {
			t.Errorf("%s at %d: %v", p.path, p.t, p.v)
		}
	}
	later := graphiteData(tEnd + 600)
	if len(later) != len(pts) {
		t.Fatalf("%d points at T+600, %d at T", len(later), len(pts))
	}
	for i := range pts {
		if later[i].path != pts[i].path || later[i].v != pts[i].v || later[i].t != pts[i].t+600 {
			t.Fatalf("point %d: %+v at T+600, %+v at T", i, later[i], pts[i])
		}
	}
}
