package harness

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
	"time"

	"github.com/aerie-db/aerie/internal/childproc"
)

// PeerSpec is how to start one peer process.
type PeerSpec struct {
	Name string // in errors, logs and reports: "aerie", "vm", "influxd"
	Bin  string
	// Args returns the command line over the data directory dir, listening
	// on addrs (Ports loopback addresses, addrs[0] the HTTP one). It may
	// write a configuration file into dir.
	Args  func(dir string, addrs []string) ([]string, error)
	Ports int // loopback addresses the peer listens on (default 1)
	// ReadyPath answers 200 on addrs[0] once the peer takes requests;
	// Ready, if set, is asked instead (a non-HTTP peer, a second listener).
	ReadyPath    string
	Ready        func(ctx context.Context, p *Peer) error
	ReadyTimeout time.Duration // default 2 min
	StopGrace    time.Duration // SIGTERM to SIGKILL; default 1 min
	Env          []string      // added to this process' environment
}

// Peer is one running peer process over a data directory of the run.
type Peer struct {
	Spec    PeerSpec
	Dir     string   // data directory, owned by the run
	Addrs   []string // 127.0.0.1:port, Spec.Ports of them
	LogPath string
	proc    *childproc.Proc
}

// ErrExited marks a peer that exited before it was ready (a port taken
// between choosing and binding it is the usual cause; Fleet.Start retries).
var ErrExited = errors.New("exited")

// StartPeer starts spec over dataDir, its output appended to logPath, and
// waits until it is ready. The kernel kills it if this process dies
// without stopping it.
func StartPeer(ctx context.Context, spec PeerSpec, dataDir, logPath string) (*Peer, error) {
	addrs, err := FreeAddrs(max(spec.Ports, 1))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	p := &Peer{Spec: spec, Dir: dataDir, Addrs: addrs, LogPath: logPath}
	args, err := spec.Args(dataDir, addrs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
	cmd := exec.Command(spec.Bin, args...)
	if len(spec.Env) > 0 {
		cmd.Env = append(os.Environ(), spec.Env...)
	}
	if p.proc, err = childproc.Start(spec.Name, logPath, cmd); err != nil {
		return nil, fmt.Errorf("%w (%s)", err, spec.Bin)
	}
	if err := p.waitReady(ctx); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// FreeAddrs returns n loopback addresses whose ports were free a moment
// ago (all listeners held until all are chosen).
func FreeAddrs(n int) ([]string, error) {
	var out []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		out = append(out, l.Addr().String())
	}
	return out, nil
}

// Addr is the peer's first (HTTP) address.
func (p *Peer) Addr() string { return p.Addrs[0] }

// URL is path on the peer's first address.
func (p *Peer) URL(path string) string { return "http://" + p.Addrs[0] + path }

// PID is the peer's process id.
func (p *Peer) PID() int { return p.proc.Cmd.Process.Pid }

// Args is the peer's command line, without the binary.
func (p *Peer) Args() []string { return p.proc.Cmd.Args[1:] }

// Stats reads the peer's CPU time and memory from /proc.
func (p *Peer) Stats() (ProcStats, error) {
	st, err := ReadProc("/proc", p.PID())
	if err != nil {
		return st, fmt.Errorf("%s: %w", p.Spec.Name, err)
	}
	return st, nil
}

// CPU is the peer's utime + stime.
func (p *Peer) CPU() (time.Duration, error) { return ProcCPU(p.PID()) }

func (p *Peer) waitReady(ctx context.Context) error {
	timeout := p.Spec.ReadyTimeout
	if timeout == 0 {
		timeout = 2 * time.Minute
	}
	deadline := time.Now().Add(timeout)
	c := &http.Client{Timeout: 2 * time.Second}
	var last error
	for {
		if p.Spec.Ready != nil {
			last = p.Spec.Ready(ctx, p)
		} else {
			last = httpReady(ctx, c, p.URL(p.Spec.ReadyPath))
		}
		if last == nil {
			return nil
		}
		select {
		case <-p.proc.Done():
			return fmt.Errorf("%s %s: %w before it was ready (%v); its log ends:\n%s", p.Spec.Name, strings.Join(p.Args(), " "), ErrExited, p.proc.WaitErr(), p.LogTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s %s: not ready after %v (%v); its log ends:\n%s", p.Spec.Name, strings.Join(p.Args(), " "), timeout, last, p.LogTail())
		}
	}
}

func httpReady(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// DialReady is a PeerSpec.Ready for a peer that is ready once its n-th
// address (0-based) accepts TCP connections, after its HTTP ReadyPath
// answers 200 if that is set.
func DialReady(n int) func(ctx context.Context, p *Peer) error {
	c := &http.Client{Timeout: 2 * time.Second}
	return func(ctx context.Context, p *Peer) error {
		if p.Spec.ReadyPath != "" {
			if err := httpReady(ctx, c, p.URL(p.Spec.ReadyPath)); err != nil {
				return err
			}
		}
		conn, err := net.DialTimeout("tcp", p.Addrs[n], time.Second)
		if err != nil {
			return err
		}
		return conn.Close()
	}
}

// LogTail returns the last 15 lines of the peer's log.
func (p *Peer) LogTail() string { return p.proc.Tail(15) }

// Alive returns an error if the peer has exited.
func (p *Peer) Alive() error {
	if !p.proc.Exited() {
		return nil
	}
	return fmt.Errorf("%s exited (%v); its log ends:\n%s", p.Spec.Name, p.proc.WaitErr(), p.LogTail())
}

// Stop sends SIGTERM and, after the spec's grace, SIGKILL; it returns an
// error if the peer did not exit cleanly. Stopping a stopped peer is a
// no-op.
func (p *Peer) Stop() error {
	if p.proc.Exited() {
		return nil
	}
	grace := p.Spec.StopGrace
	if grace == 0 {
		grace = time.Minute
	}
	if err := p.proc.Stop(grace); err != nil {
		return fmt.Errorf("%w; its log ends:\n%s", err, p.LogTail())
	}
	return nil
}

// Kill sends SIGKILL and waits for the exit (a crash test's stop).
func (p *Peer) Kill() {
	if p.proc.Exited() {
		return
	}
	p.proc.Cmd.Process.Kill()
	<-p.proc.Done()
}

// Fleet starts the peers of a run, each with its log in the run's
// directory, and stops every one still running at StopAll, even when the
// run fails or is interrupted.
type Fleet struct {
	Root string    // the run's scratch directory: logs (and data, by default)
	Log  io.Writer // where StopAll reports a peer that did not stop cleanly
	mu   sync.Mutex
	live map[*Peer]bool // guarded by mu
}

// NewFleet returns a fleet whose logs go to root.
func NewFleet(root string, log io.Writer) *Fleet {
	if log == nil {
		log = io.Discard
	}
	return &Fleet{Root: root, Log: log, live: map[*Peer]bool{}}
}

// Start starts spec over dataDir (default Root/NAME) and waits until it is
// ready; its log is Root/NAME-BASE(dataDir).log. A peer that exits before
// it is ready (its port taken meanwhile) is tried twice more.
func (f *Fleet) Start(ctx context.Context, spec PeerSpec, dataDir string) (*Peer, error) {
	if dataDir == "" {
		dataDir = filepath.Join(f.Root, spec.Name)
	}
	logPath := filepath.Join(f.Root, fmt.Sprintf("%s-%s.log", spec.Name, filepath.Base(dataDir)))
	var lastErr error
	for range 3 {
		p, err := StartPeer(ctx, spec, dataDir, logPath)
		if err == nil {
			f.mu.Lock()
			f.live[p] = true
			f.mu.Unlock()
			return p, nil
		}
		lastErr = err
		if ctx.Err() != nil || !errors.Is(err, ErrExited) {
			break
		}
	}
	return nil, lastErr
}

// Stop stops p (Peer.Stop) and forgets it. A peer that had exited by
// itself is an error.
func (f *Fleet) Stop(p *Peer) error {
	f.mu.Lock()
	live := f.live[p]
	delete(f.live, p)
	f.mu.Unlock()
	if !live {
		return nil
	}
	if err := p.Alive(); err != nil {
		return fmt.Errorf("had exited: %w", err)
	}
	return p.Stop()
}

// StopAll stops every peer still running, in parallel.
func (f *Fleet) StopAll() {
	f.mu.Lock()
	var ps []*Peer
	for p := range f.live {
		ps = append(ps, p)
	}
	f.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Go(func() {
			if err := f.Stop(p); err != nil {
				fmt.Fprintf(f.Log, "stopping %s: %v\n", p.Spec.Name, err)
			}
		})
	}
	wg.Wait()
}
