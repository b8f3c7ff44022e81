package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aerie-db/aerie/internal/childproc"
)

const (
	// stopGrace is how long a process has to exit after SIGTERM before it
	// gets SIGKILL.
	stopGrace = 10 * time.Second
	// readyTimeout bounds every wait for a process to answer its readiness
	// endpoint (Aerie's includes the WAL replay).
	readyTimeout = 60 * time.Second
	// logTailLines is how much of each process log a failing test prints.
	logTailLines = 80
)

// tmpRoot holds what outlives one test: the aerie build and the shared
// stack's directories. TestMain creates and removes it.
var tmpRoot string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "aerie-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	tmpRoot = dir
	code := m.Run()
	// The shared stack stops in reverse start order: Prometheus before
	// Aerie, its remote-write target, then node_exporter.
	stopStart := time.Now()
	for _, err := range stopShared() {
		fmt.Fprintln(os.Stderr, "e2e: stopping the shared stack:", err)
		code = max(code, 1)
	}
	if d := time.Since(stopStart); d > 5*time.Second {
		fmt.Fprintf(os.Stderr, "e2e: stopping the shared stack took %s\n", d.Round(time.Millisecond))
	}
	if code != 0 {
		fmt.Fprintln(os.Stderr, "e2e: kept logs and data under", tmpRoot)
	} else {
		os.RemoveAll(tmpRoot)
	}
	os.Exit(code)
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func mustFreePort(t testing.TB) int {
	t.Helper()
	p, err := freePort()
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	return p
}

// waitHTTP polls url until it answers 200, the process exits, or timeout.
func waitHTTP(p *childproc.Proc, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: 2 * time.Second}
	var last string
	for {
		if p.Exited() {
			return fmt.Errorf("%s exited (%v) before %s answered 200 (its log follows)", p.Name, p.WaitErr(), url)
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s did not answer 200 within %s (last: %s)", p.Name, url, timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// group is a set of processes stopped together, in reverse start order, so
// that a remote-write sender (started last) stops before its receiver.
type group struct {
	logDir string
	mu     sync.Mutex
	procs  []*childproc.Proc
}

// dataDir returns a new directory for a process's data in the group's
// directory, removed with it after the group's processes stop. A
// t.TempDir made after newTestGroup would be removed before they stop
// (cleanups run last registered first): "directory not empty" when a
// process writes there meanwhile.
func (g *group) dataDir(t testing.TB, name string) string {
	t.Helper()
	d := filepath.Join(g.logDir, name+"-data")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func (g *group) start(name, bin string, args ...string) (*childproc.Proc, error) {
	p, err := childproc.Start(name, filepath.Join(g.logDir, name+".log"), exec.Command(bin, args...))
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	g.procs = append(g.procs, p)
	g.mu.Unlock()
	return p, nil
}

// stopAll stops every process, last started first, and returns what went
// wrong.
func (g *group) stopAll() []error {
	g.mu.Lock()
	procs := append([]*childproc.Proc(nil), g.procs...)
	g.mu.Unlock()
	var errs []error
	for i := len(procs) - 1; i >= 0; i-- {
		if err := procs[i].Stop(stopGrace); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

func (g *group) dumpLogs(t testing.TB) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range g.procs {
		t.Logf("--- log of %s (%s):\n%s", p.Name, p.LogPath, p.Tail(logTailLines))
	}
}

// newTestGroup returns a group whose processes log under t.TempDir() and
// stop in t.Cleanup; their logs are printed when the test failed.
func newTestGroup(t *testing.T) *group {
	g := &group{logDir: t.TempDir()}
	t.Cleanup(func() {
		for _, err := range g.stopAll() {
			if strings.HasPrefix(err.Error(), "aerie") {
				// Aerie's contract includes a clean exit on SIGTERM.
				t.Errorf("%v", err)
			} else {
				t.Logf("%v", err)
			}
		}
		if t.Failed() {
			g.dumpLogs(t)
		}
	})
	return g
}

// ---- binaries ----

func requireLong(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("long end-to-end test: skipped with -short")
	}
}

// requireDebian skips the test when Debian's prometheus or
// prometheus-node-exporter is not installed.
func requireDebian(t *testing.T) {
	t.Helper()
	for _, bin := range []string{"prometheus", "prometheus-node-exporter"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed (run scripts/install-deps.sh: apt-get install prometheus prometheus-node-exporter)", bin)
		}
	}
}

var aerieBuild struct {
	once    sync.Once
	path    string
	skipMsg string // non-empty: no usable `aerie serve`
}

// requireAerieServe builds ./cmd/aerie once per test binary (or takes
// $AERIE_E2E_BIN) and skips the test when the binary has no `serve`
// subcommand (`aerie serve --help` fails).
func requireAerieServe(t *testing.T) string {
	t.Helper()
	aerieBuild.once.Do(func() {
		aerieBuild.path, aerieBuild.skipMsg = buildAerie()
	})
	if aerieBuild.skipMsg != "" {
		t.Skip(aerieBuild.skipMsg)
	}
	return aerieBuild.path
}

func buildAerie() (path, skipMsg string) {
	path = os.Getenv("AERIE_E2E_BIN")
	if path == "" {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		gomod := strings.TrimSpace(string(out))
		if err != nil || gomod == "" || gomod == os.DevNull {
			return "", fmt.Sprintf("cannot find the module root (go env GOMOD: %q, %v)", gomod, err)
		}
		path = filepath.Join(tmpRoot, "bin", "aerie")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", path, "./cmd/aerie")
		cmd.Dir = filepath.Dir(gomod)
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			// The rest of the suite (go vet, the unit tests) reports a broken
			// build; here it only means there is no server to test.
			lines := strings.SplitN(strings.TrimSpace(string(out)), "\n", 5)
			return "", fmt.Sprintf("aerie serve is not available: go build ./cmd/aerie failed (%v): %s", err, strings.Join(lines[:min(len(lines), 4)], " | "))
		}
		fmt.Fprintf(os.Stderr, "e2e: built %s in %s\n", path, time.Since(start).Round(100*time.Millisecond))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, path, "serve", "--help")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Sprintf("aerie serve does not exist yet (`aerie serve --help`: %v: %s)", err, strings.TrimSpace(out.String()))
	}
	return path, ""
}

// ---- the three servers ----

// nodeExporterArgs turns off the collectors that only log errors here (no
// systemd) or depend on files other packages drop (textfile).
func nodeExporterArgs(port int) []string {
	return []string{
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
		"--no-collector.systemd",
		"--no-collector.textfile",
	}
}

// startNodeExporter starts node_exporter on a free port and waits for it.
func startNodeExporter(g *group, name string) (port int, err error) {
	if port, err = freePort(); err != nil {
		return 0, err
	}
	p, err := g.start(name, "prometheus-node-exporter", nodeExporterArgs(port)...)
	if err != nil {
		return 0, err
	}
	p.DiesOnTERM = true
	return port, waitHTTP(p, fmt.Sprintf("http://127.0.0.1:%d/metrics", port), readyTimeout)
}

// prometheusConfig scrapes node_exporter (job node) and Prometheus itself
// (job prometheus) every second and, when remoteWritePort is not 0,
// remote-writes everything to Aerie with a short batch deadline.
func prometheusConfig(nodePort, promPort, remoteWritePort int) string {
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ["127.0.0.1:%d"]
  - job_name: prometheus
    static_configs:
      - targets: ["127.0.0.1:%d"]
`, nodePort, promPort)
	if remoteWritePort != 0 {
		cfg += fmt.Sprintf(`remote_write:
  - url: http://127.0.0.1:%d/api/v1/write
    queue_config:
      batch_send_deadline: 1s
      max_samples_per_send: 2000
      min_backoff: 50ms
      max_backoff: 1s
`, remoteWritePort)
	}
	return cfg
}

// startPrometheus starts Debian's Prometheus with cfg and waits for /-/ready.
func startPrometheus(g *group, name, dir string, port int, cfg string) (*childproc.Proc, error) {
	cfgPath := filepath.Join(dir, name+".yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	p, err := g.start(name, "prometheus",
		"--config.file="+cfgPath,
		"--storage.tsdb.path="+filepath.Join(dir, name+"-data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
	)
	if err != nil {
		return nil, err
	}
	return p, waitHTTP(p, fmt.Sprintf("http://127.0.0.1:%d/-/ready", port), readyTimeout)
}

// aerieScrapeConfig is a prometheus.yml for Aerie that scrapes node_exporter
// every second as job node-aerie (Prometheus' copy is job node).
func aerieScrapeConfig(nodePort int) string {
	return fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: node-aerie
    static_configs:
      - targets: ["127.0.0.1:%d"]
`, nodePort)
}

// startAerie runs `aerie serve` on dataDir (with cfg as its config file when
// not empty) and waits for /-/ready.
func startAerie(g *group, name, bin, dataDir string, port int, cfg string) (*childproc.Proc, error) {
	args := []string{"serve", "--data.dir=" + dataDir, fmt.Sprintf("--http.addr=127.0.0.1:%d", port)}
	if cfg != "" {
		cfgPath := filepath.Join(g.logDir, name+".yml")
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
			return nil, err
		}
		args = append(args, "--config.file="+cfgPath)
	}
	p, err := g.start(name, bin, args...)
	if err != nil {
		return nil, err
	}
	return p, waitHTTP(p, fmt.Sprintf("http://127.0.0.1:%d/-/ready", port), readyTimeout)
}

// startTestAerie starts a config-less Aerie for one test and returns its
// base URL.
func startTestAerie(t *testing.T, g *group, name, dataDir string) (*childproc.Proc, string) {
	t.Helper()
	bin := requireAerieServe(t)
	port := mustFreePort(t)
	p, err := startAerie(g, name, bin, dataDir, port, "")
	if err != nil {
		t.Fatal(err)
	}
	return p, fmt.Sprintf("http://127.0.0.1:%d", port)
}
