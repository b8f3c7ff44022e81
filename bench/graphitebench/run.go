package graphitebench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/internal/childproc"
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
	fleet    *harness.Fleet
	end      int64 // the last point's time, epoch seconds
	client   *http.Client
	profiled bool
	rep      *Report
}

// load is a dataset with its clients' payloads.
type load struct {
	dataset
	p     [][]byte
	bytes int64
}

// Run measures Graphite ingest and render on Aerie against carbon-cache
// and graphite-web (doc.go). Every server it starts is stopped before it
// returns.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if err := graphitetest.Available(); err != nil {
		return nil, err
	}
	var err error
	if cfg.Aerie == "" {
		if cfg.Aerie, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("the aerie binary: %w (pass --aerie)", err)
		}
	}
	root := cfg.Dir
	if root == "" {
		if root, err = os.MkdirTemp("", "aerie-bench-graphite-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(root)
	}
	r := &runner{ctx: ctx, cfg: cfg, fleet: harness.NewFleet(root, cfg.Log), client: &http.Client{Timeout: 5 * time.Minute}}
	defer r.fleet.StopAll()
	defer r.client.CloseIdleConnections()
	r.end = time.Now().Unix()/10*10 - 10
	r.rep = r.newReport()
	r.rep.Config["loadavg_start"] = harness.LoadAvg()
	if cfg.Series > cfg.CarbonSeries {
		r.logf("== aerie alone, %d series", cfg.Series)
		srv, err := r.ingestAerie("aerie-alone", r.load(cfg.Series))
		if err == nil {
			err = r.fleet.Stop(srv)
		}
		if err != nil {
			return nil, fmt.Errorf("aerie, %d series: %w", cfg.Series, err)
		}
		if err := os.RemoveAll(srv.Dir); err != nil {
			return nil, err
		}
	}
	r.logf("== aerie and carbon, %d series, and the panels", cfg.CarbonSeries)
	if err := r.sideBySide(); err != nil {
		return nil, err
	}
	r.rep.Config["loadavg_end"] = harness.LoadAvg()
	r.rep.Ratios = r.rep.ratios()
	r.rep.Done()
	return r.rep, nil
}

// load generates the payloads of series series.
func (r *runner) load(series int) load {
	t := time.Now()
	l := load{dataset: dataset{Hosts: series / MetricsPerHost, Steps: int(r.cfg.Span / Step), End: r.end}}
	l.p = l.payloads(r.cfg.Clients)
	for _, b := range l.p {
		l.bytes += int64(len(b))
	}
	r.logf("generated %d points of %d series (%.0f MB) in %.1f s", l.points(), l.series(), float64(l.bytes)/1e6, time.Since(t).Seconds())
	return l
}

// aerieSpec is `aerie serve` over a fresh directory, with a
// configuration file that turns on carbon's plaintext listener on its
// second address and names carbon's two files, written beside it; it is
// ready once that listener accepts connections.
func (r *runner) aerieSpec() harness.PeerSpec {
	return harness.PeerSpec{
		Name: aerie, Bin: r.cfg.Aerie, Ports: 2, ReadyPath: "/-/ready", Ready: harness.DialReady(1),
		Args: func(dir string, addrs []string) ([]string, error) {
			path := func(name string) string { return filepath.Join(dir, name) }
			for name, text := range map[string]string{
				"storage-schemas.conf":     Schemas,
				"storage-aggregation.conf": graphitetest.DefaultAggregation,
				"aerie.yml":                aerieConfig(addrs[1], path("storage-schemas.conf"), path("storage-aggregation.conf")),
			} {
				if err := os.WriteFile(path(name), []byte(text), 0o644); err != nil {
					return nil, err
				}
			}
			return []string{"serve", "--data.dir=" + path("data"), "--http.addr=" + addrs[0], "--config.file=" + path("aerie.yml")}, nil
		},
	}
}

// aerieConfig is the configuration file of the run's aerie serve:
// carbon's plaintext TCP listener only, statsd off, carbon's schema files.
func aerieConfig(carbonAddr, schemas, aggregation string) string {
	return fmt.Sprintf(`aerie:
  graphite: {plaintext_tcp: %q, plaintext_udp: "", pickle_tcp: ""}
  statsd: {udp: "", tcp: ""}
  rollup: {schemas_file: %q, aggregation_file: %q}
`, carbonAddr, schemas, aggregation)
}

// sideBySide loads the scale's CarbonSeries into a fresh aerie serve and
// a fresh carbon-cache, one after the other, and renders the panels.
func (r *runner) sideBySide() (err error) {
	l := r.load(r.cfg.CarbonSeries)
	srv, err := r.ingestAerie(aerie, l)
	if err != nil {
		return fmt.Errorf("aerie, %d series: %w", l.series(), err)
	}
	r.logf("starting carbon-cache and graphite-web")
	g, err := graphitetest.StartDir(filepath.Join(r.fleet.Root, carbon), graphitetest.Options{Schemas: Schemas, Aggregation: graphitetest.DefaultAggregation})
	if g != nil {
		defer func() {
			serr := g.Stop()
			switch {
			case errors.Is(serr, childproc.ErrStopTimeout):
				// Measured and compared already: a peer slow to exit
				// (carbon-cache's tag writer draining its queue) is
				// logged with its threads' tracebacks, not a failure.
				r.logf("%v\n%s", serr, g.Logs())
			case err == nil && serr != nil:
				err = fmt.Errorf("%w\n%s", serr, g.Logs())
			}
		}()
	}
	if err != nil {
		return fmt.Errorf("carbon-cache and graphite-web: %w", err)
	}
	r.rep.Peers[1].Version = g.Versions
	if err := r.ingestCarbon(g, l); err != nil {
		return fmt.Errorf("carbon, %d series: %w\n%s", l.series(), err, g.Logs())
	}
	l.p = nil
	r.logf("== panels")
	if err := r.panels(srv.URL(""), g.URL); err != nil {
		return fmt.Errorf("panels: %w", err)
	}
	return r.fleet.Stop(srv)
}

// result is an ingest of l into peer, stored as how says.
func (l load) result(peer, how string) IngestResult {
	return IngestResult{Peer: peer, How: how, Series: l.series(), Steps: l.Steps, Points: l.points(), Bytes: l.bytes, Clients: len(l.p)}
}

// ingest sends l to the server pid listening on addr and waits (stored)
// until it has stored every point; it measures the server's CPU time,
// run-queue wait and RSS over that interval. It returns when the first
// dial was.
func (r *runner) ingest(res *IngestResult, pid int, addr string, l load, stored func(start time.Time, accept time.Duration) error) (time.Time, error) {
	cpu0, err := harness.ProcCPU(pid)
	if err != nil {
		return time.Time{}, err
	}
	wait0, _ := harness.RunWait(pid)
	w := harness.WatchRSS(pid, 250*time.Millisecond)
	start := time.Now()
	r.logf("%s: sending %d points over %d connections", res.Peer, res.Points, len(l.p))
	acc, err := send(r.ctx, addr, l.p)
	if err == nil {
		res.AcceptSeconds = acc.Seconds()
		r.logf("%s: accepted in %.1f s (%.0f points/s)", res.Peer, acc.Seconds(), float64(res.Points)/acc.Seconds())
		err = stored(start, acc)
	}
	cpu1, cerr := harness.ProcCPU(pid)
	wait1, _ := harness.RunWait(pid)
	res.RSSPeakBytes, res.RSSEndBytes = w.End()
	if err := cmp.Or(err, cerr); err != nil {
		return start, err
	}
	res.CPUSeconds = (cpu1 - cpu0).Seconds()
	res.RunWaitSeconds = round3((wait1 - wait0).Seconds())
	return start, nil
}

// ingestAerie starts aerie serve over the run's directory name, sends
// it l and waits until Aerie's counters say every point is stored, then
// checks the points through PromQL. It leaves the server running.
func (r *runner) ingestAerie(name string, l load) (*harness.Peer, error) {
	srv, err := r.fleet.Start(r.ctx, r.aerieSpec(), filepath.Join(r.fleet.Root, name))
	if err != nil {
		return nil, err
	}
	res := l.result(aerie, "stored: aerie_graphite_stored_total reached the points sent (polled every 100 ms); then PromQL sum(count_over_time), count(...) and sum(sum_over_time) over every series must equal what was sent")
	base := srv.URL("")
	c0, err := readCounters(r.ctx, r.client, base)
	if err != nil {
		return srv, err
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
	var c aerieCounters
	points := float64(l.points())
	_, err = r.ingest(&res, srv.PID(), srv.Addrs[1], l, func(start time.Time, acc time.Duration) error {
		deadline := time.Now().Add(max(2*time.Minute, 20*acc))
		for {
			t := time.Since(start)
			var err error
			if c, err = readCounters(r.ctx, r.client, base); err != nil {
				return err
			}
			if c.Stored-c0.Stored >= points || c.Stored+c.Rejected-c0.Stored-c0.Rejected >= points {
				res.StoredSeconds = t.Seconds()
				return nil
			}
			if err := srv.Alive(); err != nil {
				return err
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%w: after %s, aerie counts %.0f points received, %.0f stored, %.0f rejected, %.0f malformed of %d sent",
					ErrMismatch, time.Since(start).Round(time.Second), c.Received-c0.Received, c.Stored-c0.Stored, c.Rejected-c0.Rejected, c.Malformed-c0.Malformed, l.points())
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	if err != nil {
		return srv, err
	}
	if profErr != nil {
		if err := <-profErr; err != nil {
			r.rep.Notes = append(r.rep.Notes, "profile: "+err.Error())
		}
	}
	if rej, mal := c.Rejected-c0.Rejected, c.Malformed-c0.Malformed; rej > 0 || mal > 0 {
		return srv, fmt.Errorf("%w: aerie rejected %.0f and found %.0f malformed of %d points", ErrMismatch, rej, mal, l.points())
	}
	if res.Stored, err = checkAerie(r.ctx, r.client, base, l.dataset); err != nil {
		return srv, err
	}
	r.finish(res)
	return srv, nil
}

// ingestCarbon sends l to carbon-cache and waits until its cache has
// written every metric to whisper; then it counts the points in the
// whisper files.
func (r *runner) ingestCarbon(g *graphitetest.Graphite, l load) error {
	res := l.result(carbon, "stored: carbon's cache held no point of any series, asked twice a writer pass apart (graphitetest.Flush over its cache-query port); then the points in each whisper file's archive are counted and summed")
	names := l.names()
	start, err := r.ingest(&res, g.CarbonPID(), g.PlaintextAddr, l, func(start time.Time, acc time.Duration) error {
		if ferr := g.Flush(names, max(5*time.Minute, 30*acc)); ferr != nil {
			res.Note = "the cache did not empty: " + ferr.Error()
		}
		res.StoredSeconds = time.Since(start).Seconds()
		return nil
	})
	if err != nil {
		return err
	}
	whisperDir := filepath.Join(g.Dir, "storage", "whisper")
	// Points still in flight when the cache first looked empty show up
	// in a later count; it is final once two counts a Flush apart agree.
	var sum float64
	last := int64(-1)
	for {
		if res.Stored, sum, err = checkWhisper(whisperDir, l.dataset); err != nil {
			return err
		}
		if res.Stored == res.Points || res.Stored == last {
			break
		}
		last = res.Stored
		g.Flush(names, time.Minute)
		res.StoredSeconds = time.Since(start).Seconds()
	}
	if res.Stored == res.Points && sum != l.sum() {
		res.Note = strings.TrimSpace(res.Note + fmt.Sprintf(" whisper's values sum to %.17g, %.17g sent", sum, l.sum()))
	}
	r.finish(res)
	return nil
}

// finish fills res's drops and rates and adds it to the report.
func (r *runner) finish(res IngestResult) {
	res.Dropped = res.Points - res.Stored
	res.AcceptedPerSecond = round3(float64(res.Points) / res.AcceptSeconds)
	res.StoredPerSecond = round3(float64(res.Stored) / res.StoredSeconds)
	if res.CPUSeconds > 0 {
		res.StoredPerCPUSecond = round3(float64(res.Stored) / res.CPUSeconds)
	}
	r.logf("%s: stored %d of %d points in %.1f s (%.0f points/s), %.1f CPU s, peak RSS %.0f MB", res.Peer, res.Stored, res.Points, res.StoredSeconds, float64(res.Stored)/res.StoredSeconds, res.CPUSeconds, float64(res.RSSPeakBytes)/1e6)
	r.rep.Ingest = append(r.rep.Ingest, res)
}

// profile takes a CPU profile of Aerie's server into cfg.Profile and
// keeps its top frames.
func (r *runner) profile(base string) error {
	r.rep.Config["profile"] = fmt.Sprintf("%d s from %s after the first dial of Aerie's largest ingest", r.cfg.ProfileSeconds, r.cfg.ProfileAfter)
	c := &http.Client{Timeout: time.Duration(r.cfg.ProfileSeconds)*time.Second + time.Minute}
	resp, err := c.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, r.cfg.ProfileSeconds))
	if err != nil {
		return err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if err := os.WriteFile(r.cfg.Profile, b, 0o644); err != nil {
		return err
	}
	out, err := exec.Command("go", "tool", "pprof", "-top", "-nodecount=25", r.cfg.Aerie, r.cfg.Profile).Output()
	if err != nil {
		return fmt.Errorf("go tool pprof -top %s: %w", r.cfg.Profile, err)
	}
	r.rep.Profile = strings.Split(strings.TrimRight(string(out), "\n"), "\n")
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
		res[i] = PanelResult{Name: p.Name, Target: p.Target, Range: fmt.Sprintf("%dh", int(p.Range.Hours())), Series: len(ans[1].series), Points: ans[1].points, Runs: r.cfg.Runs}
		res[i].Diffs, res[i].Examples = compareAnswers(ans[0], ans[1])
		if ans[1].points == 0 {
			return fmt.Errorf("%s: graphite-web's answer has no points: the data did not arrive", p.Target)
		}
	}
	for run := range r.cfg.Runs {
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
		r.logf("panels: run %d of %d", run+1, r.cfg.Runs)
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

func (r *runner) newReport() *Report {
	oneLine := func(s string) string { return strings.TrimSpace(strings.ReplaceAll(s, "\n", "; ")) }
	rep := &Report{
		Header: harness.NewHeader(Kind, r.cfg.Scale),
		Config: map[string]string{
			"span":             r.cfg.Span.String(),
			"step":             Step.String(),
			"metrics_per_host": fmt.Sprint(MetricsPerHost),
			"end":              time.Unix(r.end, 0).UTC().Format(time.RFC3339),
			"clients":          fmt.Sprint(r.cfg.Clients),
			"schemas":          oneLine(Schemas),
			"aggregation":      oneLine(graphitetest.DefaultAggregation),
			"aerie_binary":     r.cfg.Aerie,
			"max_data_points":  fmt.Sprint(MaxDataPoints),
		},
	}
	rep.Peers = []Peer{
		{Name: aerie, Version: rep.Commit, Args: "serve --data.dir=DIR --http.addr=127.0.0.1:PORT --config.file=aerie.yml (" + strings.TrimSpace(strings.ReplaceAll(aerieConfig("127.0.0.1:PORT", "storage-schemas.conf", "storage-aggregation.conf"), "\n", " ")) + ")"},
		{Name: carbon, Args: "carbon-cache --nodaemon (internal/graphite/graphitetest: MAX_CACHE_SIZE, MAX_CREATES_PER_MINUTE unlimited, MAX_UPDATES_PER_SECOND 1000000, CACHE_WRITE_STRATEGY sorted, WHISPER_AUTOFLUSH False, USE_FLOW_CONTROL True); graphite-web 1.1 under `django-admin runserver` (Django's threaded development server), whisper reads plus CARBONLINK"},
	}
	return rep
}

// ratios are the headline figures.
func (rep *Report) ratios() []harness.Ratio {
	var out []harness.Ratio
	if big := rep.ingest(aerie, 0); big != nil {
		met := big.StoredPerSecond >= GoalPointsPerSecond
		out = append(out,
			harness.Ratio{Name: fmt.Sprintf("Aerie stored points/s, %d series ÷ goal 1 M", big.Series), Value: round3(big.StoredPerSecond / GoalPointsPerSecond), Goal: "≥ 1", Met: &met},
			harness.Ratio{Name: fmt.Sprintf("Aerie stored points/s, %d series ÷ Tgres' 150 K (8 cores)", big.Series), Value: round3(big.StoredPerSecond / TgresPointsPerSecond)})
	}
	if eqC := rep.ingest(carbon, 0); eqC != nil {
		if eqA := rep.ingest(aerie, eqC.Series); eqA != nil {
			out = append(out,
				harness.Ratio{Name: fmt.Sprintf("Aerie ÷ carbon-cache, stored points/s, %d series", eqA.Series), Value: round3(eqA.StoredPerSecond / eqC.StoredPerSecond)},
				harness.Ratio{Name: fmt.Sprintf("Aerie ÷ carbon-cache, stored points per CPU second, %d series", eqA.Series), Value: round3(eqA.StoredPerCPUSecond / eqC.StoredPerCPUSecond)},
				harness.Ratio{Name: fmt.Sprintf("Aerie ÷ carbon-cache, peak RSS, %d series", eqA.Series), Value: round3(float64(eqA.RSSPeakBytes) / float64(eqC.RSSPeakBytes))})
		}
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
			harness.Ratio{Name: fmt.Sprintf("Aerie ÷ graphite-web, render p50, geometric mean over %d panels", len(rep.Panels)), Value: round3(math.Exp(logSum / float64(len(rep.Panels))))},
			harness.Ratio{Name: "panels whose answers differ from graphite-web's", Value: float64(diffs)})
	}
	return out
}

func (r *runner) logf(format string, args ...any) { harness.Logf(r.cfg.Log, format, args...) }
