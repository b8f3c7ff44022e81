package sensorbench

// The process handling here does what bench/httpbench's fleet, server,
// readProc and diskUsage do; those are unexported there, so this package
// keeps a small version of its own (one server at a time, no restarts on
// a taken port).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Peer names.
const (
	aerie = "aerie"
	vm    = "vm"
)

// server is one running peer process over a data directory of the run.
type server struct {
	name    string
	dir     string
	addr    string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error // valid after exited is closed
}

// peerArgs returns the command line of a peer over dir on addr: Aerie
// with its defaults; VictoriaMetrics as bench/httpbench runs it (data of
// 2024 kept, fresh samples visible at once).
func peerArgs(name, dir, addr string) []string {
	if name == aerie {
		return []string{"serve", "--data.dir=" + dir, "--http.addr=" + addr}
	}
	return []string{"-httpListenAddr=" + addr, "-storageDataPath=" + dir, "-retentionPeriod=100y", "-search.latencyOffset=0s"}
}

// startServer starts peer name (binary bin) over dir and waits until it
// answers its readiness path.
func startServer(ctx context.Context, name, bin, dir, logDir string) (*server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := &server{name: name, dir: dir, addr: addr, exited: make(chan struct{}),
		logPath: filepath.Join(logDir, name+"-"+filepath.Base(dir)+".log")}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(bin, peerArgs(name, dir, addr)...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	// The kernel kills the server if this process dies without stopping it.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		logf.Close()
		close(s.exited)
	}()
	ready := "/-/ready"
	if name == vm {
		ready = "/health"
	}
	deadline := time.Now().Add(2 * time.Minute)
	c := &http.Client{Timeout: 2 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url(ready), nil)
		if resp, err := c.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("%s exited before it was ready (%v); its log ends:\n%s", name, s.waitErr, s.logTail())
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s not ready after 2 min; its log ends:\n%s", name, s.logTail())
		}
	}
}

func (s *server) url(path string) string { return "http://" + s.addr + path }

// logTail returns the last lines of the server's log.
func (s *server) logTail() string {
	b, _ := os.ReadFile(s.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}

// alive returns an error if the server has exited.
func (s *server) alive() error {
	select {
	case <-s.exited:
		return fmt.Errorf("%s exited (%v); its log ends:\n%s", s.name, s.waitErr, s.logTail())
	default:
		return nil
	}
}

// stop sends SIGTERM and, after a minute, SIGKILL; it returns an error if
// the server did not exit cleanly. Stopping a stopped server is a no-op.
func (s *server) stop() error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
		if s.waitErr != nil {
			return fmt.Errorf("%s: %v after SIGTERM; its log ends:\n%s", s.name, s.waitErr, s.logTail())
		}
		return nil
	case <-time.After(time.Minute):
		s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("%s did not stop within a minute of SIGTERM and was killed", s.name)
	}
}

// cpu returns the server's utime+stime.
func (s *server) cpu() (time.Duration, error) {
	return procCPU(s.cmd.Process.Pid)
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat
// (100 on every Linux architecture Go supports).
const clockTicks = 100

// procCPU reads utime+stime of pid from /proc/PID/stat, counting fields
// from the last ')' (the command name may hold spaces and parentheses).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
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

// diskUsage returns the bytes of the regular files under dir, in all and
// by the top-level entry they are in.
func diskUsage(dir string) (int64, map[string]int64, error) {
	var total int64
	byTop := map[string]int64{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) { // removed while we walk (a merge, a flush)
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		total += info.Size()
		rel, _ := filepath.Rel(dir, path)
		top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		byTop[top] += info.Size()
		return nil
	})
	return total, byTop, err
}
