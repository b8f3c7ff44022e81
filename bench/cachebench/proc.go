package cachebench

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// proc is one server process of the run (influxd or memcached) with its
// output in a log file.
type proc struct {
	name, logPath string
	cmd           *exec.Cmd
	exited        chan struct{}
	waitErr       error // valid after exited is closed
}

// startProc starts bin with args, its output appended to logPath. The
// kernel kills it if this process dies without stopping it.
func startProc(name, logPath, bin string, args ...string) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	p := &proc{name: name, logPath: logPath, cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, bin, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	return p, nil
}

// waitReady polls ready every 50 ms until it succeeds, the process
// exits, or a minute passes (then the process is stopped).
func (p *proc) waitReady(ready func() error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%s exited before it was ready (%v); its log ends:\n%s", p.name, p.waitErr, p.logTail())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return fmt.Errorf("%s not ready after a minute (%v); its log ends:\n%s", p.name, err, p.logTail())
		}
	}
}

// logTail returns the last lines of the process' log.
func (p *proc) logTail() string {
	b, _ := os.ReadFile(p.logPath)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}

// alive returns an error if the process has exited.
func (p *proc) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited (%v); its log ends:\n%s", p.name, p.waitErr, p.logTail())
	default:
		return nil
	}
}

// stop sends SIGTERM and, after 30 s, SIGKILL. Stopping a stopped
// process is a no-op.
func (p *proc) stop() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not stop within 30 s of SIGTERM and was killed", p.name)
	}
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

// errMissing marks a peer that is not installed.
var errMissing = errors.New("not installed (scripts/install-deps.sh installs Debian's influxdb and memcached)")

// Available returns an error if influxd or memcached is not on $PATH.
func Available() error {
	for _, bin := range []string{"influxd", "memcached"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s: %w", bin, errMissing)
		}
	}
	return nil
}
