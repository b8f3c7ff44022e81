package graphitetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aerie-db/aerie/internal/childproc"
)

const (
	// readyTimeout bounds the wait for each process to answer.
	readyTimeout = 60 * time.Second
	// stopGrace is how long a process has after SIGTERM before SIGKILL
	// (and the test fails). 10 s was too short once: a clean-clone CI run
	// failed TestGraphiteSelfDifferential at teardown, its comparison
	// equal, after ~9 s more than the same test takes alone.
	stopGrace = 30 * time.Second
	// logTailLines is how much of each log a failing test prints.
	logTailLines = 60
)

// DefaultSchemas is the storage-schemas.conf used when Options.Schemas is
// empty.
const DefaultSchemas = `[default]
pattern = .*
retentions = 10s:6h,1m:7d
`

// DefaultAggregation is the storage-aggregation.conf used when
// Options.Aggregation is empty: carbon's own default (average, xFilesFactor
// 0.5), written out.
const DefaultAggregation = `[default]
pattern = .*
xFilesFactor = 0.5
aggregationMethod = average
`

// Options configures Start.
type Options struct {
	// Schemas and Aggregation are the contents of carbon's
	// storage-schemas.conf and storage-aggregation.conf.
	Schemas, Aggregation string
}

// Graphite is a running carbon-cache and graphite-web pair.
type Graphite struct {
	// PlaintextAddr is carbon's plaintext line receiver (TCP), host:port.
	PlaintextAddr string
	// URL is graphite-web's base URL, http://127.0.0.1:PORT, without a
	// trailing slash.
	URL string
	// Dir holds the configuration, whisper files and logs.
	Dir string
	// Versions are the Debian package versions, "graphite-carbon 1.1.7-1.1,
	// graphite-web 1.1.8-2", or "" when dpkg cannot tell.
	Versions string

	cacheQueryAddr string
	linkScript     string
	python         string // Debian's Python interpreter
	client         *http.Client

	carbon, web *childproc.Proc
}

// requireEnv names the environment variables under which a missing Graphite
// fails the test instead of skipping it.
var requireEnv = []string{"CI", "AERIE_REQUIRE_GRAPHITE"}

// Available reports whether carbon-cache, django-admin and graphite-web's
// Python package are installed (nil) or what is missing.
func Available() error {
	_, err := python()
	return err
}

// python returns the interpreter carbon-cache runs on (its #! line: Debian's
// /usr/bin/python3, not whichever python3 comes first in $PATH), once it
// has checked that carbon's, whisper's and graphite-web's packages import.
func python() (string, error) {
	for _, bin := range []string{"carbon-cache", "django-admin"} {
		if _, err := exec.LookPath(bin); err != nil {
			return "", fmt.Errorf("%s is not installed (scripts/install-deps.sh installs Debian's graphite-carbon and graphite-web)", bin)
		}
	}
	path, _ := exec.LookPath("carbon-cache")
	interp := "/usr/bin/python3"
	if b, err := os.ReadFile(path); err == nil {
		line, _, _ := strings.Cut(string(b[:min(len(b), 200)]), "\n")
		if f := strings.Fields(strings.TrimPrefix(line, "#!")); strings.HasPrefix(line, "#!") && len(f) == 1 {
			interp = f[0]
		}
	}
	if out, err := exec.Command(interp, "-c", "import graphite.render, carbon, whisper").CombinedOutput(); err != nil {
		return "", fmt.Errorf("graphite-web's or carbon's Python package is missing (%s -c 'import graphite.render, carbon, whisper': %v: %s; scripts/install-deps.sh installs Debian's graphite-carbon and graphite-web)",
			interp, err, strings.TrimSpace(string(out)))
	}
	return interp, nil
}

// Start starts carbon-cache and graphite-web for t and stops them in t's
// cleanup. It skips t when they are not installed, unless CI or
// AERIE_REQUIRE_GRAPHITE is set, and fails t when they do not start.
func Start(t testing.TB, opts Options) *Graphite {
	t.Helper()
	interp, err := python()
	if err != nil {
		for _, v := range requireEnv {
			if os.Getenv(v) != "" {
				t.Fatalf("%v (required: %s is set)", err, v)
			}
		}
		t.Skip(err)
	}
	g, err := start(t.TempDir(), interp, opts)
	t.Cleanup(func() {
		err := g.Stop()
		switch {
		case errors.Is(err, childproc.ErrStopTimeout):
			// Both are peers stopped after the test compared what they
			// answered; a hang in their shutdown (carbon-cache's, twice
			// in CI, whisper files already flushed) is theirs to log,
			// with the threads' tracebacks, not a failure of the test.
			t.Logf("graphitetest: %v\n%s", err, g.Logs())
		case err != nil:
			t.Errorf("graphitetest: %v", err)
		}
		if t.Failed() && !errors.Is(err, childproc.ErrStopTimeout) {
			t.Log(g.Logs())
		}
	})
	if err != nil {
		t.Fatalf("graphitetest: %v", err)
	}
	return g
}

// StartDir is Start outside a test (bench/graphitebench): it starts
// carbon-cache and graphite-web under dir, which the caller owns, and
// returns an error where Start would skip or fail. The caller must call
// Stop, also after an error (whatever started is stopped).
func StartDir(dir string, opts Options) (*Graphite, error) {
	interp, err := python()
	if err != nil {
		return nil, err
	}
	return start(dir, interp, opts)
}

// CarbonPID is carbon-cache's process id (its CPU time and RSS are in
// /proc/PID), or 0 if it has not started.
func (g *Graphite) CarbonPID() int {
	if g.carbon == nil {
		return 0
	}
	return g.carbon.Cmd.Process.Pid
}

func start(dir, interp string, opts Options) (*Graphite, error) {
	g := &Graphite{Dir: dir, python: interp, client: &http.Client{Timeout: 30 * time.Second}}
	if opts.Schemas == "" {
		opts.Schemas = DefaultSchemas
	}
	if opts.Aggregation == "" {
		opts.Aggregation = DefaultAggregation
	}
	ports, err := freePorts(4)
	if err != nil {
		return g, err
	}
	linePort, picklePort, queryPort, webPort := ports[0], ports[1], ports[2], ports[3]
	g.PlaintextAddr = fmt.Sprintf("127.0.0.1:%d", linePort)
	g.cacheQueryAddr = fmt.Sprintf("127.0.0.1:%d", queryPort)
	g.URL = fmt.Sprintf("http://127.0.0.1:%d", webPort)

	conf, storage, web := filepath.Join(dir, "conf"), filepath.Join(dir, "storage"), filepath.Join(dir, "web")
	whisperDir := filepath.Join(storage, "whisper")
	for _, d := range []string{conf, whisperDir, filepath.Join(storage, "log"), filepath.Join(storage, "lists"), filepath.Join(web, "log")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return g, err
		}
	}
	files := map[string]string{
		filepath.Join(conf, "carbon.conf"):               carbonConf(storage, linePort, picklePort, queryPort, g.URL),
		filepath.Join(conf, "storage-schemas.conf"):      opts.Schemas,
		filepath.Join(conf, "storage-aggregation.conf"):  opts.Aggregation,
		filepath.Join(web, "aerie_graphite_settings.py"): webSettings(web, storage, whisperDir, g.cacheQueryAddr),
		filepath.Join(web, "carbonlink_pending.py"):      carbonlinkScript,
	}
	for path, content := range files {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return g, err
		}
	}
	g.linkScript = filepath.Join(web, "carbonlink_pending.py")
	g.Versions = debianVersions("graphite-carbon", "graphite-web")

	webEnv := append(os.Environ(),
		"PYTHONPATH="+web,
		"GRAPHITE_SETTINGS_MODULE=aerie_graphite_settings",
		"DJANGO_SETTINGS_MODULE=graphite.settings",
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONFAULTHANDLER=1",
	)

	// carbon-cache starts while graphite-web's database is created; it
	// needs graphite-web only to tag series, and data come after both
	// answer.
	g.carbon, err = startProc("carbon-cache", dir, append(os.Environ(), "PYTHONFAULTHANDLER=1"), "carbon-cache",
		"--config="+filepath.Join(conf, "carbon.conf"),
		"--pidfile="+filepath.Join(storage, "carbon-cache.pid"),
		"--nodaemon", "start")
	if err != nil {
		return g, err
	}
	migrate := exec.Command("django-admin", "migrate", "--run-syncdb", "--verbosity=0")
	migrate.Env = webEnv
	migrate.Dir = web
	if out, err := migrate.CombinedOutput(); err != nil {
		return g, fmt.Errorf("graphite-web: django-admin migrate: %v: %s", err, childproc.Tail(string(out), 20))
	}
	g.web, err = startProc("graphite-web", dir, webEnv, "django-admin",
		"runserver", fmt.Sprintf("127.0.0.1:%d", webPort), "--noreload")
	if err != nil {
		return g, err
	}
	if err := waitTCP(g.carbon, g.cacheQueryAddr, readyTimeout); err != nil {
		return g, err
	}
	if err := waitTCP(g.carbon, g.PlaintextAddr, readyTimeout); err != nil {
		return g, err
	}
	if err := g.waitWeb(readyTimeout); err != nil {
		return g, err
	}
	return g, nil
}

// carbonConf is carbon.conf's [cache] section: everything under storage,
// every listener on 127.0.0.1.
func carbonConf(storage string, linePort, picklePort, queryPort int, webURL string) string {
	return fmt.Sprintf(`[cache]
STORAGE_DIR = %[1]s
LOCAL_DATA_DIR = %[1]s/whisper
WHITELISTS_DIR = %[1]s/lists
LOG_DIR = %[1]s/log
PID_DIR = %[1]s
USER =
DATABASE = whisper
ENABLE_LOGROTATION = False
MAX_CACHE_SIZE = inf
MAX_UPDATES_PER_SECOND = 1000000
MAX_UPDATES_PER_SECOND_ON_SHUTDOWN = 1000000
MAX_CREATES_PER_MINUTE = inf
MIN_TIMESTAMP_LAG = 0
CACHE_WRITE_STRATEGY = sorted
WHISPER_AUTOFLUSH = False
WHISPER_FALLOCATE_CREATE = False
WHISPER_LOCK_WRITES = True
LINE_RECEIVER_INTERFACE = 127.0.0.1
LINE_RECEIVER_PORT = %[2]d
ENABLE_UDP_LISTENER = False
PICKLE_RECEIVER_INTERFACE = 127.0.0.1
PICKLE_RECEIVER_PORT = %[3]d
CACHE_QUERY_INTERFACE = 127.0.0.1
CACHE_QUERY_PORT = %[4]d
USE_FLOW_CONTROL = True
LOG_UPDATES = False
LOG_CREATES = False
LOG_CACHE_HITS = False
LOG_CACHE_QUEUE_SORTS = False
LOG_LISTENER_CONN_SUCCESS = False
CARBON_METRIC_INTERVAL = 0
ENABLE_TAGS = True
GRAPHITE_URL = %[5]s
TAG_UPDATE_INTERVAL = 1
TAG_BATCH_SIZE = 100
TAG_QUEUE_SIZE = 100000
`, storage, linePort, picklePort, queryPort, webURL)
}

// webSettings is graphite-web's settings module (what local_settings.py
// would hold).
func webSettings(web, storage, whisperDir, cacheQueryAddr string) string {
	return fmt.Sprintf(`# graphite-web settings written by internal/graphite/graphitetest
SECRET_KEY = 'aerie-graphitetest'
ALLOWED_HOSTS = ['*']
TIME_ZONE = 'UTC'
DEBUG = False
STORAGE_DIR = %[2]q
WHISPER_DIR = %[3]q
CONF_DIR = %[1]q
LOG_DIR = %[1]q + '/log'
INDEX_FILE = %[1]q + '/index'
STATIC_ROOT = %[1]q + '/static'
STANDARD_DIRS = [%[3]q]
CARBONLINK_HOSTS = [%[4]q + ':a']
CARBONLINK_TIMEOUT = 5.0
CARBONLINK_RETRY_DELAY = 1
USE_WORKER_POOL = False
FUNCTION_PLUGINS = []
TAGDB = 'graphite.tags.localdatabase.LocalDatabaseTagDB'
TAGDB_CACHE_DURATION = 0
DEFAULT_CACHE_DURATION = 0
FIND_CACHE_DURATION = 0
CACHES = {'default': {'BACKEND': 'django.core.cache.backends.dummy.DummyCache'}}
SILENCED_SYSTEM_CHECKS = ['models.W042']
LOG_RENDERING_PERFORMANCE = False
LOG_CACHE_PERFORMANCE = False
LOG_INFO_PERFORMANCE = False
DATABASES = {'default': {'NAME': %[1]q + '/graphite.db', 'ENGINE': 'django.db.backends.sqlite3'}}
`, web, storage, whisperDir, cacheQueryAddr)
}

// carbonlinkScript asks carbon's cache-query port (carbon's own protocol: a
// 4-byte big-endian length, then a pickle; graphite-web speaks it too) for
// the cached points of the metrics read as a JSON list from stdin, and
// prints a JSON object of the metrics that still have some, with their
// counts.
const carbonlinkScript = `import json, pickle, socket, struct, sys

host, port = sys.argv[1], int(sys.argv[2])
metrics = json.load(sys.stdin)
req = pickle.dumps({'type': 'cache-query-bulk', 'metrics': metrics}, protocol=2)
s = socket.create_connection((host, port), timeout=20)
s.sendall(struct.pack('!L', len(req)) + req)

def recv(n):
    b = b''
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise SystemExit('carbon closed the connection after %d of %d bytes' % (len(b), n))
        b += c
    return b

(n,) = struct.unpack('!L', recv(4))
resp = pickle.loads(recv(n))
if 'datapointsByMetric' not in resp:
    raise SystemExit('carbon answered %r' % (resp,))
json.dump({m: len(v) for m, v in resp['datapointsByMetric'].items() if v}, sys.stdout)
`

// Send writes data (plaintext lines, "path value timestamp\n") to carbon's
// line receiver on one connection.
func (g *Graphite) Send(data []byte) error {
	c, err := net.DialTimeout("tcp", g.PlaintextAddr, 5*time.Second)
	if err != nil {
		return fmt.Errorf("carbon plaintext: %w", err)
	}
	if _, err := c.Write(data); err != nil {
		c.Close()
		return fmt.Errorf("carbon plaintext: write: %w", err)
	}
	return c.Close()
}

// Flush waits, up to timeout, until carbon has written every point it holds
// of metrics to whisper and graphite-web knows every tagged one (invariant
// 4). Tagged metrics may be given in any tag order.
func (g *Graphite) Flush(metrics []string, timeout time.Duration) error {
	names := make([]string, len(metrics))
	var tagged []string
	for i, m := range metrics {
		names[i] = NormalizeTagged(m)
		if strings.Contains(m, ";") {
			tagged = append(tagged, names[i])
		}
	}
	req, err := json.Marshal(names)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	host, port, _ := net.SplitHostPort(g.cacheQueryAddr)
	empty := 0
	var last string
	// Carbon's writer pops a metric from the cache before writing it and
	// sleeps a second when the cache is empty: the cache must be seen
	// empty twice, 300 ms apart, for the last popped metric to be on disk.
	for empty < 2 {
		if time.Now().After(deadline) {
			return fmt.Errorf("carbon did not write its cache within %s (still cached: %s)", timeout, last)
		}
		cmd := exec.Command(g.python, g.linkScript, host, port)
		cmd.Stdin = bytes.NewReader(req)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("carbon cache query: %v: %s", err, strings.TrimSpace(stderr.String()))
		}
		var pending map[string]int
		if err := json.Unmarshal(out, &pending); err != nil {
			return fmt.Errorf("carbon cache query: %v in %q", err, out)
		}
		if len(pending) == 0 {
			empty++
		} else {
			empty = 0
			last = summarize(pending)
		}
		time.Sleep(300 * time.Millisecond)
	}
	for len(tagged) > 0 {
		known, err := g.taggedSeries()
		if err != nil {
			return err
		}
		var missing []string
		for _, m := range tagged {
			if !known[m] {
				missing = append(missing, m)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("graphite-web's tag database lacks %d tagged series after %s, e.g. %q", len(missing), timeout, missing[0])
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

func summarize(pending map[string]int) string {
	keys := make([]string, 0, len(pending))
	for k := range pending {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%d metrics", len(keys))
	for i, k := range keys[:min(len(keys), 3)] {
		if i == 0 {
			b.WriteString(", e.g. ")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%d points)", k, pending[k])
	}
	return b.String()
}

// taggedSeries returns the series graphite-web's tag database holds.
func (g *Graphite) taggedSeries() (map[string]bool, error) {
	var series []string
	if err := g.GetJSON("/tags/findSeries?"+url.Values{"expr": {"name=~.+"}}.Encode(), &series); err != nil {
		return nil, err
	}
	known := make(map[string]bool, len(series))
	for _, s := range series {
		known[s] = true
	}
	return known, nil
}

// NormalizeTagged returns a tagged path (name;k=v;...) with its tags sorted
// by key, the form carbon and graphite-web store it in; an untagged path is
// returned as is.
func NormalizeTagged(path string) string {
	name, rest, ok := strings.Cut(path, ";")
	if !ok {
		return path
	}
	tags := strings.Split(rest, ";")
	slices.SortStableFunc(tags, func(a, b string) int {
		ka, _, _ := strings.Cut(a, "=")
		kb, _, _ := strings.Cut(b, "=")
		return strings.Compare(ka, kb)
	})
	return name + ";" + strings.Join(tags, ";")
}

// Get fetches graphite-web's path (with its query) and returns the body of a
// 200 answer, or an error holding the status and the start of the body.
func (g *Graphite) Get(path string) ([]byte, error) {
	return get(g.client, g.URL+path)
}

// GetJSON fetches path and decodes its JSON answer into v.
func (g *Graphite) GetJSON(path string, v any) error {
	b, err := g.Get(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("graphite-web %s: %v in %.200q", path, err, b)
	}
	return nil
}

func get(c *http.Client, u string) ([]byte, error) {
	resp, err := c.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return b, fmt.Errorf("GET %s: %s: %.300s", u, resp.Status, b)
	}
	return b, nil
}

// WaitPoints polls /render until target has at least n non-null points in
// (from, until] (epoch seconds) in total over its series, or timeout.
func (g *Graphite) WaitPoints(target string, from, until int64, n int, timeout time.Duration) error {
	q := url.Values{"target": {target}, "from": {fmt.Sprint(from)}, "until": {fmt.Sprint(until)}, "format": {"json"}}
	deadline := time.Now().Add(timeout)
	for {
		var series []struct {
			Datapoints [][2]*float64 `json:"datapoints"`
		}
		err := g.GetJSON("/render?"+q.Encode(), &series)
		got := 0
		for _, s := range series {
			for _, p := range s.Datapoints {
				if p[0] != nil {
					got++
				}
			}
		}
		if err == nil && got >= n {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return err
			}
			return fmt.Errorf("%s: %d non-null points after %s, want %d", target, got, timeout, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Stop stops graphite-web, then carbon-cache. It is safe to call more than
// once. In that order carbon's tag writer, which drains its queue before
// carbon exits, gets refused at once; the other way it waits for
// graphite-web to tag every queued batch (a clean-clone CI run saw
// carbon-cache still doing so 30 s after SIGTERM).
func (g *Graphite) Stop() error {
	var errs []error
	for _, p := range []*childproc.Proc{g.web, g.carbon} {
		if p != nil {
			if err := p.Stop(stopGrace); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Logs returns the end of both processes' console logs.
func (g *Graphite) Logs() string {
	var b strings.Builder
	for _, p := range []*childproc.Proc{g.carbon, g.web} {
		if p != nil {
			fmt.Fprintf(&b, "--- %s (%s):\n%s\n", p.Name, p.LogPath, p.Tail(logTailLines))
		}
	}
	return b.String()
}

func (g *Graphite) waitWeb(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	c := &http.Client{Timeout: 2 * time.Second}
	var last error
	for {
		if g.web.Exited() {
			return fmt.Errorf("graphite-web exited (%v) before it answered", g.web.WaitErr())
		}
		if _, last = get(c, g.URL+"/metrics/find?query=*"); last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("graphite-web did not answer within %s: %v", timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func waitTCP(p *childproc.Proc, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if p.Exited() {
			return fmt.Errorf("%s exited (%v) before %s accepted connections", p.Name, p.WaitErr(), addr)
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s did not accept connections within %s: %v", p.Name, addr, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePorts returns n distinct TCP ports of 127.0.0.1 that were free a
// moment ago (all listeners are held until all are chosen).
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func debianVersions(pkgs ...string) string {
	var parts []string
	for _, p := range pkgs {
		out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", p).Output()
		if err != nil || len(out) == 0 {
			return ""
		}
		parts = append(parts, p+" "+string(out))
	}
	return strings.Join(parts, ", ")
}

// startProc starts bin in dir, logging to dir/name.log. Dying of SIGTERM
// is a normal exit (Django's development server has no handler for it).
func startProc(name, dir string, env []string, bin string, args ...string) (*childproc.Proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Dir = dir
	p, err := childproc.Start(name, filepath.Join(dir, name+".log"), cmd)
	if err != nil {
		return nil, err
	}
	p.DiesOnTERM = true
	p.DumpSignal = syscall.SIGABRT // PYTHONFAULTHANDLER prints the threads
	return p, nil
}
