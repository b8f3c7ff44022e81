package graphitebench

// The process handling is a small version of bench/sensorbench's (whose
// helpers are unexported): one aerie serve at a time, on free loopback
// ports, stopped before Run returns.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// aerieServer is one `aerie serve` over a data directory of the run.
type aerieServer struct {
	dir, addr, carbonAddr, logPath string
	args                           []string
	cmd                            *exec.Cmd
	exited                         chan struct{}
	waitErr                        error // valid after exited is closed
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

// freeAddrs returns n loopback addresses whose ports were free a moment
// ago (all listeners held until all are chosen).
func freeAddrs(n int) ([]string, error) {
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

// startAerie starts bin's `serve` over dir with the configuration written
// there, and waits until it answers /-/ready and its carbon listener
// accepts connections.
func startAerie(ctx context.Context, bin, dir, schemas, aggregation string) (*aerieServer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addrs, err := freeAddrs(2)
	if err != nil {
		return nil, err
	}
	s := &aerieServer{dir: dir, addr: addrs[0], carbonAddr: addrs[1], exited: make(chan struct{}), logPath: filepath.Join(dir, "aerie.log")}
	cfgPath := filepath.Join(dir, "aerie.yml")
	if err := os.WriteFile(cfgPath, []byte(aerieConfig(s.carbonAddr, schemas, aggregation)), 0o644); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	s.args = []string{"serve", "--data.dir=" + filepath.Join(dir, "data"), "--http.addr=" + s.addr, "--config.file=" + cfgPath}
	s.cmd = exec.Command(bin, s.args...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	// The kernel kills the server if this process dies without stopping it.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start aerie (%s): %w", bin, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		logf.Close()
		close(s.exited)
	}()
	deadline := time.Now().Add(2 * time.Minute)
	c := &http.Client{Timeout: 2 * time.Second}
	for {
		ok := false
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url("/-/ready"), nil)
		if resp, err := c.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				if conn, err := net.DialTimeout("tcp", s.carbonAddr, time.Second); err == nil {
					conn.Close()
					ok = true
				}
			}
		}
		if ok {
			return s, nil
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("aerie exited before it was ready (%v); its log ends:\n%s", s.waitErr, s.logTail())
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("aerie not ready after 2 min; its log ends:\n%s", s.logTail())
		}
	}
}

func (s *aerieServer) url(path string) string { return "http://" + s.addr + path }
func (s *aerieServer) pid() int               { return s.cmd.Process.Pid }

// logTail returns the last lines of the server's log.
func (s *aerieServer) logTail() string {
	b, _ := os.ReadFile(s.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}

// alive returns an error if the server has exited.
func (s *aerieServer) alive() error {
	select {
	case <-s.exited:
		return fmt.Errorf("aerie exited (%v); its log ends:\n%s", s.waitErr, s.logTail())
	default:
		return nil
	}
}

// stop sends SIGTERM and, after a minute, SIGKILL; it returns an error if
// the server did not exit cleanly. Stopping a stopped server is a no-op.
func (s *aerieServer) stop() error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		if s.waitErr != nil {
			return fmt.Errorf("aerie: %v after SIGTERM; its log ends:\n%s", s.waitErr, s.logTail())
		}
		return nil
	case <-time.After(time.Minute):
		s.cmd.Process.Kill()
		<-s.exited
		return errors.New("aerie did not stop within a minute of SIGTERM and was killed")
	}
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat.
const clockTicks = 100

// procCPU reads utime+stime of pid from /proc/PID/stat, counting fields
// from the last ')' (the command name may hold spaces and parentheses).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

func parseStatCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("/proc/PID/stat: no ')' after the command name")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/PID/stat: %d fields after the command name, want at least 13", len(f))
	}
	var ticks uint64
	for _, x := range f[11:13] { // fields 14 and 15
		n, err := strconv.ParseUint(x, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/PID/stat: utime/stime %q: %w", x, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// procRunWait sums, over pid's threads, the time they were runnable but
// waited for a CPU (the second field of /proc/PID/task/TID/schedstat, in
// ns): how much the machine's other work kept the server off the cores.
// Threads that have exited are not counted.
func procRunWait(pid int) (time.Duration, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil {
		return 0, err
	}
	if len(tasks) == 0 {
		return 0, fmt.Errorf("/proc/%d/task/*/schedstat: none", pid)
	}
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			if os.IsNotExist(err) || errors.Is(err, syscall.ESRCH) {
				continue // the thread exited
			}
			return 0, err
		}
		w, err := parseSchedstatWait(b)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", t, err)
		}
		total += w
	}
	return total, nil
}

func parseSchedstatWait(b []byte) (time.Duration, error) {
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return 0, fmt.Errorf("schedstat %q: want 3 fields", b)
	}
	n, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("schedstat run-queue wait %q: %w", f[1], err)
	}
	return time.Duration(n), nil
}

// procRSS reads VmRSS of pid from /proc/PID/status, in bytes.
func procRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseStatusRSS(b)
}

func parseStatusRSS(b []byte) (int64, error) {
	for line := range strings.SplitSeq(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("/proc/PID/status: VmRSS line %q: want \"N kB\"", line)
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/PID/status: VmRSS %q: %w", f[0], err)
		}
		return n << 10, nil
	}
	return 0, errors.New("/proc/PID/status: no VmRSS line")
}

// rssWatch samples a process' RSS every interval until stopped and keeps
// the peak.
type rssWatch struct {
	pid  int
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex // guards peak
	peak int64
}

func watchRSS(pid int, every time.Duration) *rssWatch {
	w := &rssWatch{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			w.sample()
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
		}
	}()
	return w
}

func (w *rssWatch) sample() {
	if n, err := procRSS(w.pid); err == nil {
		w.mu.Lock()
		w.peak = max(w.peak, n)
		w.mu.Unlock()
	}
}

// end stops the sampling and returns the peak and the current RSS.
func (w *rssWatch) end() (peak, now int64) {
	close(w.stop)
	<-w.done
	now, _ = procRSS(w.pid)
	w.mu.Lock()
	defer w.mu.Unlock()
	return max(w.peak, now), now
}
