package graphitebench

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/internal/graphite/graphitetest"
)

// Schemas is carbon's storage-schemas.conf for both peers: one archive
// of 10 s points for a day, so that 1 h, 6 h and 24 h panels read the
// same archive on both.
const Schemas = `[bench]
pattern = .*
retentions = 10s:1d
`

// Peer names.
const (
	aerie  = "aerie"
	carbon = "carbon"
)

// runner carries one run's state.
type runner struct {
	ctx      context.Context
	cfg      Config
	sc       Scale
	root     string
	end      int64 // the last point's time, epoch seconds
	schemas  string
	agg      string
	client   *http.Client
	profiled bool
	rep      *Report
}

// Run measures Graphite ingest and render on Aerie against carbon-cache
// and graphite-web (doc.go). Every server it starts is stopped before it
// returns.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	sc, err := cfg.check()
	if err != nil {
		return nil, err
	}
	if err := graphitetest.Available(); err != nil {
		return nil, err
	}
	if cfg.Aerie == "" {
		if cfg.Aerie, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("the aerie binary: %w (pass --aerie)", err)
		}
	}
	r := &runner{ctx: ctx, cfg: cfg, sc: sc, root: cfg.Dir, client: &http.Client{Timeout: 5 * time.Minute}}
	defer r.client.CloseIdleConnections()
	if r.root == "" {
		if r.root, err = os.MkdirTemp("", "aerie-bench-graphite-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(r.root)
	} else if err := os.MkdirAll(r.root, 0o755); err != nil {
		return nil, err
	}
	conf := filepath.Join(r.root, "conf")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		return nil, err
	}
	r.schemas, r.agg = filepath.Join(conf, "storage-schemas.conf"), filepath.Join(conf, "storage-aggregation.conf")
	if err := os.WriteFile(r.schemas, []byte(Schemas), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(r.agg, []byte(graphitetest.DefaultAggregation), 0o644); err != nil {
		return nil, err
	}
	start := time.Now()
	r.end = start.Unix()/10*10 - 10
	r.rep = r.newReport()
	r.rep.Config["loadavg_start"] = loadavg()
	if sc.Series > sc.CarbonSeries {
		r.logf("== aerie alone, %d series", sc.Series)
		if err := r.aerieAlone(); err != nil {
			return nil, fmt.Errorf("aerie, %d series: %w", sc.Series, err)
		}
	}
	r.logf("== aerie and carbon, %d series, and the panels", sc.CarbonSeries)
	if err := r.sideBySide(); err != nil {
		return nil, err
	}
	r.rep.Config["loadavg_end"] = loadavg()
	r.rep.Ratios = r.rep.ratios()
	r.rep.Seconds = time.Since(start).Seconds()
	return r.rep, nil
}

func (r *runner) dataset(series int) dataset {
	return dataset{Hosts: series / MetricsPerHost, Steps: int(r.sc.Span / Step), End: r.end}
}

func (r *runner) payloads(d dataset) ([][]byte, int64) {
	t := time.Now()
	p := d.payloads(r.cfg.Clients)
	var n int64
	for _, b := range p {
		n += int64(len(b))
	}
	r.logf("generated %d points of %d series (%.0f MB) in %.1f s", d.points(), d.series(), float64(n)/1e6, time.Since(t).Seconds())
	return p, n
}

// aerieAlone loads the scale's Series into a fresh aerie serve.
func (r *runner) aerieAlone() error {
	d := r.dataset(r.sc.Series)
	p, n := r.payloads(d)
	srv, err := startAerie(r.ctx, r.cfg.Aerie, filepath.Join(r.root, "aerie-alone"), r.schemas, r.agg)
	if err != nil {
		return err
	}
	res, err := r.ingestAerie(srv, d, p, n)
	if serr := srv.stop(); err == nil {
		err = serr
	}
	if err != nil {
		return err
	}
	r.rep.Ingest = append(r.rep.Ingest, res)
	return os.RemoveAll(srv.dir)
}

// sideBySide loads the scale's CarbonSeries into a fresh aerie serve and
// a fresh carbon-cache, one after the other, and renders the panels.
func (r *runner) sideBySide() (err error) {
	d := r.dataset(r.sc.CarbonSeries)
	p, n := r.payloads(d)
	srv, err := startAerie(r.ctx, r.cfg.Aerie, filepath.Join(r.root, "aerie"), r.schemas, r.agg)
	if err != nil {
		return err
	}
	defer func() {
		if serr := srv.stop(); err == nil {
			err = serr
		}
	}()
	res, err := r.ingestAerie(srv, d, p, n)
	if err != nil {
		return fmt.Errorf("aerie, %d series: %w", d.series(), err)
	}
	r.rep.Ingest = append(r.rep.Ingest, res)

	r.logf("starting carbon-cache and graphite-web")
	g, err := graphitetest.StartDir(filepath.Join(r.root, "carbon"), graphitetest.Options{Schemas: Schemas, Aggregation: graphitetest.DefaultAggregation})
	if g != nil {
		defer func() {
			if serr := g.Stop(); err == nil && serr != nil {
				err = fmt.Errorf("%w\n%s", serr, g.Logs())
			}
		}()
	}
	if err != nil {
		return fmt.Errorf("carbon-cache and graphite-web: %w", err)
	}
	r.rep.Peers[1].Version = g.Versions
	cres, err := r.ingestCarbon(g, d, p, n)
	if err != nil {
		return fmt.Errorf("carbon, %d series: %w\n%s", d.series(), err, g.Logs())
	}
	r.rep.Ingest = append(r.rep.Ingest, cres)
	p = nil
	r.logf("== panels")
	if err := r.panels(srv.url(""), g.URL); err != nil {
		return fmt.Errorf("panels: %w", err)
	}
	return srv.alive()
}

// ingestAerie sends d to srv and waits until Aerie's counters say every
// point is stored, then checks the points through PromQL.
func (r *runner) ingestAerie(srv *aerieServer, d dataset, p [][]byte, bytes int64) (IngestResult, error) {
	res := IngestResult{Peer: aerie, Series: d.series(), Steps: d.Steps, Points: d.points(), Bytes: bytes, Clients: len(p),
		How: "stored: aerie_graphite_stored_total reached the points sent (polled every 100 ms); then PromQL sum(count_over_time), count(...) and sum(sum_over_time) over every series must equal what was sent"}
	base := srv.url("")
	pid := srv.pid()
	cpu0, err := procCPU(pid)
	if err != nil {
		return res, err
	}
	wait0, _ := procRunWait(pid)
	c0, err := readCounters(r.ctx, r.client, base)
	if err != nil {
		return res, err
	}
	var profErr chan error
	if r.cfg.Profile != "" && !r.profiled {
		r.profiled = true
		profErr = make(chan error, 1)
		go func() {
			select {
			case <-time.After(r.cfg.ProfileAfter):
				profErr <- r.profile(base)
			case <-r.ctx.Done():
				profErr <- r.ctx.Err()
			}
		}()
	}
	w := watchRSS(pid, 250*time.Millisecond)
	start := time.Now()
	r.logf("aerie: sending %d points over %d connections", d.points(), len(p))
	acc, err := send(r.ctx, srv.carbonAddr, p)
	if err != nil {
		w.end()
		return res, err
	}
	res.AcceptSeconds = acc.Seconds()
	r.logf("aerie: accepted in %.1f s (%.0f points/s)", acc.Seconds(), rate(float64(d.points()), acc))
	deadline := time.Now().Add(max(2*time.Minute, 20*acc))
	var c aerieCounters
	for {
		t := time.Since(start)
		if c, err = readCounters(r.ctx, r.client, base); err != nil {
			w.end()
			return res, err
		}
		if c.Stored-c0.Stored >= float64(d.points()) || c.Stored+c.Rejected-c0.Stored-c0.Rejected >= float64(d.points()) {
			res.StoredSeconds = t.Seconds()
			break
		}
		if err := srv.alive(); err != nil {
			w.end()
			return res, err
		}
		if time.Now().After(deadline) {
			w.end()
			return res, fmt.Errorf("%w: after %s, aerie counts %.0f points received, %.0f stored, %.0f rejected, %.0f malformed of %d sent",
				ErrMismatch, time.Since(start).Round(time.Second), c.Received-c0.Received, c.Stored-c0.Stored, c.Rejected-c0.Rejected, c.Malformed-c0.Malformed, d.points())
		}
		time.Sleep(100 * time.Millisecond)
	}
	cpu1, err := procCPU(pid)
	wait1, _ := procRunWait(pid)
	res.RSSPeakBytes, res.RSSEndBytes = w.end()
	if err != nil {
		return res, err
	}
	res.CPUSeconds = (cpu1 - cpu0).Seconds()
	res.RunWaitSeconds = round3((wait1 - wait0).Seconds())
	r.logf("aerie: stored in %.1f s (%.0f points/s), %.1f CPU s, peak RSS %.0f MB", res.StoredSeconds, float64(d.points())/res.StoredSeconds, res.CPUSeconds, float64(res.RSSPeakBytes)/1e6)
	if profErr != nil {
		if err := <-profErr; err != nil {
			r.rep.Notes = append(r.rep.Notes, "profile: "+err.Error())
		}
	}
	if rej, mal := c.Rejected-c0.Rejected, c.Malformed-c0.Malformed; rej > 0 || mal > 0 {
		return res, fmt.Errorf("%w: aerie rejected %.0f and found %.0f malformed of %d points", ErrMismatch, rej, mal, d.points())
	}
	stored, err := checkAerie(r.ctx, r.client, base, d)
	res.Stored = stored
	res.Dropped = res.Points - stored
	if err != nil {
		return res, err
	}
	r.finish(&res)
	return res, nil
}

// ingestCarbon sends d to carbon-cache and waits until its cache has
// written every metric to whisper; then it counts the points in the
// whisper files.
func (r *runner) ingestCarbon(g *graphitetest.Graphite, d dataset, p [][]byte, bytes int64) (IngestResult, error) {
	res := IngestResult{Peer: carbon, Series: d.series(), Steps: d.Steps, Points: d.points(), Bytes: bytes, Clients: len(p),
		How: "stored: carbon's cache held no point of any series, asked twice a writer pass apart (graphitetest.Flush over its cache-query port); then the points in each whisper file's archive are counted and summed"}
	pid := g.CarbonPID()
	cpu0, err := procCPU(pid)
	if err != nil {
		return res, err
	}
	wait0, _ := procRunWait(pid)
	w := watchRSS(pid, 250*time.Millisecond)
	start := time.Now()
	r.logf("carbon: sending %d points over %d connections", d.points(), len(p))
	acc, err := send(r.ctx, g.PlaintextAddr, p)
	if err != nil {
		w.end()
		return res, err
	}
	res.AcceptSeconds = acc.Seconds()
	r.logf("carbon: accepted in %.1f s (%.0f points/s)", acc.Seconds(), rate(float64(d.points()), acc))
	names := d.names()
	timeout := max(5*time.Minute, 30*acc)
	if ferr := g.Flush(names, timeout); ferr != nil {
		res.Note = "the cache did not empty: " + ferr.Error()
	}
	res.StoredSeconds = time.Since(start).Seconds()
	cpu1, err := procCPU(pid)
	wait1, _ := procRunWait(pid)
	res.RSSPeakBytes, res.RSSEndBytes = w.end()
	if err != nil {
		return res, err
	}
	res.CPUSeconds = (cpu1 - cpu0).Seconds()
	res.RunWaitSeconds = round3((wait1 - wait0).Seconds())
	whisperDir := filepath.Join(g.Dir, "storage", "whisper")
	// Points still in flight when the cache first looked empty show up
	// in a later count; it is final once two counts a Flush apart agree.
	var sum float64
	last := int64(-1)
	for {
		if res.Stored, sum, err = checkWhisper(whisperDir, d); err != nil {
			return res, err
		}
		if res.Stored == res.Points || res.Stored == last {
			break
		}
		last = res.Stored
		g.Flush(names, time.Minute)
		res.StoredSeconds = time.Since(start).Seconds()
	}
	res.Dropped = res.Points - res.Stored
	if res.Dropped == 0 && sum != d.sum() {
		res.Note = strings.TrimSpace(res.Note + fmt.Sprintf(" whisper's values sum to %.17g, %.17g sent", sum, d.sum()))
	}
	r.logf("carbon: stored %d of %d points in %.1f s (%.0f points/s), %.1f CPU s, peak RSS %.0f MB", res.Stored, res.Points, res.StoredSeconds, float64(res.Stored)/res.StoredSeconds, res.CPUSeconds, float64(res.RSSPeakBytes)/1e6)
	r.finish(&res)
	return res, nil
}

// finish fills res's rates.
func (r *runner) finish(res *IngestResult) {
	res.AcceptedPerSecond = round3(float64(res.Points) / res.AcceptSeconds)
	res.StoredPerSecond = round3(float64(res.Stored) / res.StoredSeconds)
	if res.CPUSeconds > 0 {
		res.StoredPerCPUSecond = round3(float64(res.Stored) / res.CPUSeconds)
	}
}

// profile takes a CPU profile of Aerie's server into cfg.Profile and
// keeps its top frames.
func (r *runner) profile(base string) error {
	r.rep.Config["profile"] = fmt.Sprintf("%d s from %s after the first dial of Aerie's largest ingest", r.cfg.ProfileSeconds, r.cfg.ProfileAfter)
	u := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, r.cfg.ProfileSeconds)
	c := &http.Client{Timeout: time.Duration(r.cfg.ProfileSeconds)*time.Second + time.Minute}
	resp, err := c.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(r.cfg.Profile)
	if err != nil {
		return err
	}
	if _, err := f.ReadFrom(resp.Body); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=25", r.cfg.Aerie, r.cfg.Profile).Output()
	if err != nil {
		return fmt.Errorf("go tool pprof -top %s: %w", r.cfg.Profile, err)
	}
	for line := range strings.SplitSeq(strings.TrimRight(string(out), "\n"), "\n") {
		r.rep.Profile = append(r.rep.Profile, line)
	}
	return nil
}

// panels renders every panel from both peers: once to compare the
// answers, then Runs times each, the peers taking turns to go first.
func (r *runner) panels(aerieURL, graphiteURL string) error {
	bases := [2]string{aerieURL, graphiteURL}
	res := make([]PanelResult, len(Panels))
	lat := make([][2][]time.Duration, len(Panels))
	for i, p := range Panels {
		q := renderQuery(p, r.end)
		var ans [2]answer
		for k, base := range bases {
			b, _, err := render(r.ctx, r.client, base, q)
			if err != nil {
				return fmt.Errorf("%s: %w", []string{aerie, "graphite-web"}[k], err)
			}
			ans[k] = decodeAnswer(b)
		}
		res[i] = PanelResult{Name: p.Name, Target: p.Target, Range: rangeStr(p.Range), Series: len(ans[1].series), Points: ans[1].points, Runs: r.sc.Runs}
		res[i].Diffs, res[i].Examples = compareAnswers(ans[0], ans[1])
		if ans[1].points == 0 {
			return fmt.Errorf("%s: graphite-web's answer has no points: the data did not arrive", p.Target)
		}
	}
	for run := range r.sc.Runs {
		for i, p := range Panels {
			q := renderQuery(p, r.end)
			for j := range 2 {
				k := (run + i + j) % 2
				_, el, err := render(r.ctx, r.client, bases[k], q)
				if err != nil {
					return err
				}
				lat[i][k] = append(lat[i][k], el)
			}
		}
		r.logf("panels: run %d of %d", run+1, r.sc.Runs)
	}
	for i := range res {
		res[i].Aerie, res[i].Graphite = latency(lat[i][0]), latency(lat[i][1])
		if res[i].Graphite.P50Ms > 0 {
			res[i].Ratio = round3(res[i].Aerie.P50Ms / res[i].Graphite.P50Ms)
		}
	}
	r.rep.Panels = res
	return nil
}

func rangeStr(d time.Duration) string { return fmt.Sprintf("%dh", int(d.Hours())) }

func (r *runner) newReport() *Report {
	return &Report{
		Kind:    Kind,
		Machine: harness.CurrentMachine(),
		Commit:  harness.Commit(),
		Date:    time.Now().UTC().Format(time.RFC3339),
		Scale:   r.sc.Name,
		Config: map[string]string{
			"span":             r.sc.Span.String(),
			"step":             Step.String(),
			"metrics_per_host": fmt.Sprint(MetricsPerHost),
			"end":              time.Unix(r.end, 0).UTC().Format(time.RFC3339),
			"clients":          fmt.Sprint(r.cfg.Clients),
			"schemas":          strings.TrimSpace(strings.ReplaceAll(Schemas, "\n", "; ")),
			"aggregation":      strings.TrimSpace(strings.ReplaceAll(graphitetest.DefaultAggregation, "\n", "; ")),
			"aerie_binary":     r.cfg.Aerie,
			"max_data_points":  fmt.Sprint(MaxDataPoints),
		},
		Peers: []Peer{
			{Name: aerie, Version: harness.Commit(), Args: "serve --data.dir=DIR --http.addr=127.0.0.1:PORT --config.file=aerie.yml (" + strings.TrimSpace(strings.ReplaceAll(aerieConfig("127.0.0.1:PORT", "storage-schemas.conf", "storage-aggregation.conf"), "\n", " ")) + ")"},
			{Name: carbon, Args: "carbon-cache --nodaemon (internal/graphite/graphitetest: MAX_CACHE_SIZE, MAX_CREATES_PER_MINUTE unlimited, MAX_UPDATES_PER_SECOND 1000000, CACHE_WRITE_STRATEGY sorted, WHISPER_AUTOFLUSH False, USE_FLOW_CONTROL True); graphite-web 1.1 under `django-admin runserver` (Django's threaded development server), whisper reads plus CARBONLINK"},
		},
	}
}

// ratios are the headline figures.
func (rep *Report) ratios() []Ratio {
	var out []Ratio
	met := func(b bool) *bool { return &b }
	var big, eqA, eqC *IngestResult
	for i := range rep.Ingest {
		in := &rep.Ingest[i]
		if in.Peer == aerie && (big == nil || in.Series > big.Series) {
			big = in
		}
	}
	for i := range rep.Ingest {
		in := &rep.Ingest[i]
		if in.Peer == carbon {
			eqC = in
		}
	}
	for i := range rep.Ingest {
		in := &rep.Ingest[i]
		if in.Peer == aerie && eqC != nil && in.Series == eqC.Series {
			eqA = in
		}
	}
	if big != nil {
		out = append(out,
			Ratio{Name: fmt.Sprintf("Aerie stored points/s, %d series ÷ goal 1 M", big.Series), Value: round3(big.StoredPerSecond / GoalPointsPerSecond), Goal: "≥ 1", Met: met(big.StoredPerSecond >= GoalPointsPerSecond)},
			Ratio{Name: fmt.Sprintf("Aerie stored points/s, %d series ÷ Tgres' 150 K (8 cores)", big.Series), Value: round3(big.StoredPerSecond / TgresPointsPerSecond)})
	}
	if eqA != nil && eqC != nil {
		out = append(out,
			Ratio{Name: fmt.Sprintf("Aerie ÷ carbon-cache, stored points/s, %d series", eqA.Series), Value: round3(eqA.StoredPerSecond / eqC.StoredPerSecond)},
			Ratio{Name: fmt.Sprintf("Aerie ÷ carbon-cache, stored points per CPU second, %d series", eqA.Series), Value: round3(eqA.StoredPerCPUSecond / eqC.StoredPerCPUSecond)},
			Ratio{Name: fmt.Sprintf("Aerie ÷ carbon-cache, peak RSS, %d series", eqA.Series), Value: round3(float64(eqA.RSSPeakBytes) / float64(eqC.RSSPeakBytes))})
	}
	if len(rep.Panels) > 0 {
		var logSum float64
		diffs := 0
		for _, p := range rep.Panels {
			logSum += math.Log(p.Ratio)
			if p.Diffs > 0 {
				diffs++
			}
		}
		out = append(out,
			Ratio{Name: fmt.Sprintf("Aerie ÷ graphite-web, render p50, geometric mean over %d panels", len(rep.Panels)), Value: round3(math.Exp(logSum / float64(len(rep.Panels))))},
			Ratio{Name: "panels whose answers differ from graphite-web's", Value: float64(diffs)})
	}
	return out
}

// loadavg returns the 1, 5 and 15 min load averages: the machine is
// shared, and they say how much.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.cfg.Log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}
