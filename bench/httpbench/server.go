package httpbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Peer names.
const (
	aerie     = "aerie"
	vm        = "vm"         // VictoriaMetrics with its defaults
	vmNoCache = "vm-nocache" // VictoriaMetrics with -search.disableCache
)

// peerSpec is how to start one peer.
type peerSpec struct {
	name  string
	bin   string
	args  func(dir, addr string) []string
	ready string // path answering 200 once the server takes requests
	// flush makes rows acknowledged but not yet searchable searchable
	// ("": the server has none; its rows are searchable once acknowledged).
	flush string
}

func aerieSpec(bin string) peerSpec {
	return peerSpec{
		name: aerie, bin: bin, ready: "/-/ready",
		args: func(dir, addr string) []string {
			return []string{"serve", "--data.dir=" + dir, "--http.addr=" + addr}
		},
	}
}

func vmSpec(bin string, noCache bool) peerSpec {
	name := vm
	if noCache {
		name = vmNoCache
	}
	return peerSpec{
		name: name, bin: bin, ready: "/health", flush: "/internal/force_flush",
		args: func(dir, addr string) []string {
			a := []string{"-httpListenAddr=" + addr, "-storageDataPath=" + dir,
				"-retentionPeriod=100y", "-search.latencyOffset=0s"}
			if noCache {
				a = append(a, "-search.disableCache")
			}
			return a
		},
	}
}

// server is one running peer process.
type server struct {
	spec    peerSpec
	dir     string // data directory, owned by the run
	addr    string // 127.0.0.1:port
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the process has exited
	waitErr error         // valid after exited is closed
}

// fleet tracks the servers of a run so that every one is stopped, even
// when the run fails or is interrupted.
type fleet struct {
	root string // scratch directory: data directories and logs
	log  io.Writer
	mu   sync.Mutex // guards live
	live map[*server]bool
}

func newFleet(root string, log io.Writer) *fleet {
	return &fleet{root: root, log: log, live: map[*server]bool{}}
}

// start starts a peer on a free loopback port over dataDir and waits
// until it is ready.
func (f *fleet) start(ctx context.Context, spec peerSpec, dataDir string) (*server, error) {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // the free port may be taken meanwhile
		s, err := f.startOnce(ctx, spec, dataDir)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if ctx.Err() != nil || !errors.Is(err, errExited) {
			break
		}
	}
	return nil, lastErr
}

var errExited = errors.New("exited")

func (f *fleet) startOnce(ctx context.Context, spec peerSpec, dataDir string) (*server, error) {
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	s := &server{spec: spec, dir: dataDir, addr: addr, exited: make(chan struct{}),
		logPath: filepath.Join(f.root, fmt.Sprintf("%s-%s.log", spec.name, filepath.Base(dataDir)))}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(spec.bin, spec.args(dataDir, addr)...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	// The kernel kills the server if this process dies without stopping it.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s (%s): %w", spec.name, spec.bin, err)
	}
	f.mu.Lock()
	f.live[s] = true
	f.mu.Unlock()
	go func() {
		s.waitErr = s.cmd.Wait()
		logf.Close()
		close(s.exited)
	}()
	if err := s.waitReady(ctx, 2*time.Minute); err != nil {
		f.stop(s)
		return nil, err
	}
	return s, nil
}

// freePort returns a loopback address nobody listens on right now.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func (s *server) url(path string) string { return "http://" + s.addr + path }

func (s *server) pid() int { return s.cmd.Process.Pid }

func (s *server) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	c := &http.Client{Timeout: 2 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url(s.spec.ready), nil)
		if resp, err := c.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("%s %s: %w before it was ready (%v); its log ends:\n%s", s.spec.name, strings.Join(s.cmd.Args, " "), errExited, s.waitErr, s.logTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s %s: not ready after %v; its log ends:\n%s", s.spec.name, strings.Join(s.cmd.Args, " "), timeout, s.logTail())
		}
	}
}

// logTail returns the last lines of the server's log.
func (s *server) logTail() string {
	b, _ := os.ReadFile(s.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}

// stats reads the server's CPU time and memory.
func (s *server) stats() (procStats, error) {
	st, err := readProc("/proc", s.pid())
	if err != nil {
		return st, fmt.Errorf("%s: %w", s.spec.name, err)
	}
	return st, nil
}

// alive reports an error if the server has exited.
func (s *server) alive() error {
	select {
	case <-s.exited:
		return fmt.Errorf("%s exited (%v); its log ends:\n%s", s.spec.name, s.waitErr, s.logTail())
	default:
		return nil
	}
}

// stopGrace is how long a server may take to shut down after SIGTERM.
const stopGrace = time.Minute

// stop stops s: SIGTERM, then SIGKILL after stopGrace. It returns an
// error if the server did not exit cleanly by itself.
func (f *fleet) stop(s *server) error {
	f.mu.Lock()
	live := f.live[s]
	delete(f.live, s)
	f.mu.Unlock()
	if !live {
		return nil
	}
	var err error
	select {
	case <-s.exited:
		return fmt.Errorf("%s had exited (%v); its log ends:\n%s", s.spec.name, s.waitErr, s.logTail())
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		if s.waitErr != nil {
			err = fmt.Errorf("%s: %v after SIGTERM; its log ends:\n%s", s.spec.name, s.waitErr, s.logTail())
		}
	case <-time.After(stopGrace):
		s.cmd.Process.Kill()
		<-s.exited
		err = fmt.Errorf("%s did not stop within %v of SIGTERM and was killed", s.spec.name, stopGrace)
	}
	return err
}

// stopAll stops every server still running.
func (f *fleet) stopAll() {
	f.mu.Lock()
	var ss []*server
	for s := range f.live {
		ss = append(ss, s)
	}
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f.stop(s); err != nil {
				fmt.Fprintf(f.log, "stopping %s: %v\n", s.spec.name, err)
			}
		}()
	}
	wg.Wait()
}
