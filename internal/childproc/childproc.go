// Package childproc runs the outside programs that tests start (Prometheus,
// node_exporter, carbon-cache, graphite-web): a child process whose stdout
// and stderr go to a log file, stopped by SIGTERM and, after a grace period,
// SIGKILL.
//
// Invariants:
//
//  1. On Linux the kernel kills a child when the test binary dies without
//     running its cleanups (Pdeathsig); elsewhere children outlive it.
//  2. Stop stops a process once: later calls return the first call's
//     result.
//  3. Stop returns nil only when the process was running and exited with
//     status 0 after SIGTERM, or died of it when DiesOnTERM is set. A
//     process still running after the grace period is killed and Stop's
//     error wraps ErrStopTimeout.
package childproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is one child process whose stdout and stderr go to a log file.
type Proc struct {
	Name    string
	Cmd     *exec.Cmd
	LogPath string
	// DiesOnTERM: the program has no SIGTERM handler (node_exporter,
	// Django's development server), so dying of that signal is its normal
	// way out. Set before Stop.
	DiesOnTERM bool
	// DumpSignal, when not 0, is sent to a process still running after
	// Stop's grace period, which then waits dumpWait before SIGKILL: a
	// Python child started with PYTHONFAULTHANDLER=1 writes every thread's
	// traceback to its log on SIGABRT, so the log says where it hung.
	DumpSignal syscall.Signal

	done    chan struct{} // closed when the process has exited
	waitErr error         // cmd.Wait's result, set before done is closed

	stopOnce sync.Once
	stopErr  error
}

// ErrStopTimeout is wrapped by Stop's error when the process outlived its
// grace period after SIGTERM and was killed.
var ErrStopTimeout = errors.New("did not exit after SIGTERM")

// dumpWait is how long Stop waits for a process to exit after DumpSignal.
const dumpWait = 5 * time.Second

// Start starts cmd as name, its stdout and stderr appended to logPath after
// a line with the command.
func Start(name, logPath string, cmd *exec.Cmd) (*Proc, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(f, "### %s\n", strings.Join(cmd.Args, " "))
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, Cmd: cmd, LogPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// WaitErr is cmd.Wait's result: valid once the process has exited (Done
// is closed), nil before.
func (p *Proc) WaitErr() error {
	if !p.Exited() {
		return nil
	}
	return p.waitErr
}

// Stop sends SIGTERM, waits grace, then sends SIGKILL. See invariants 2
// and 3.
func (p *Proc) Stop(grace time.Duration) error {
	p.stopOnce.Do(func() {
		if p.Exited() {
			p.stopErr = fmt.Errorf("%s had exited before it was stopped: %v (log: %s)", p.Name, p.waitErr, p.LogPath)
			return
		}
		start := time.Now()
		_ = p.Cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
			if p.waitErr != nil && !(p.DiesOnTERM && killedBy(p.waitErr, syscall.SIGTERM)) {
				p.stopErr = fmt.Errorf("%s: after SIGTERM: %v", p.Name, p.waitErr)
			}
		case <-time.After(grace):
			late := time.Since(start).Round(time.Millisecond)
			how := "killed"
			if p.DumpSignal != 0 {
				_ = p.Cmd.Process.Signal(p.DumpSignal)
				how = "sent " + p.DumpSignal.String() + " (its log has what it was doing), then killed"
				select {
				case <-p.done:
				case <-time.After(dumpWait):
				}
			}
			_ = p.Cmd.Process.Kill()
			<-p.done
			p.stopErr = fmt.Errorf("%s %w within %s; %s", p.Name, ErrStopTimeout, late, how)
		}
	})
	return p.stopErr
}

func killedBy(err error, sig syscall.Signal) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == sig
}

// Tail returns the last n lines of the process log.
func (p *Proc) Tail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return err.Error()
	}
	return Tail(string(b), n)
}

// Tail returns the last n lines of s, after a line that counts the lines
// left out.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("[... %d lines before]", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
