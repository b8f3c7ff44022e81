package harness

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat:
// 100 on every Linux architecture Go supports (sysconf(_SC_CLK_TCK) needs
// cgo).
const clockTicks = 100

// ProcStats is what the kernel says about a process.
type ProcStats struct {
	CPU time.Duration // utime + stime
	RSS int64         // VmRSS, bytes
	HWM int64         // VmHWM (peak resident set), bytes
}

// ReadProc reads /proc/PID/stat and /proc/PID/status under root ("/proc").
func ReadProc(root string, pid int) (ProcStats, error) {
	dir := filepath.Join(root, strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return ProcStats{}, err
	}
	cpu, err := ParseStat(stat)
	if err != nil {
		return ProcStats{}, fmt.Errorf("%s/stat: %w", dir, err)
	}
	status, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return ProcStats{}, err
	}
	st := ProcStats{CPU: cpu}
	if st.RSS, err = StatusBytes(status, "VmRSS"); err != nil {
		return ProcStats{}, fmt.Errorf("%s/status: %w", dir, err)
	}
	if st.HWM, err = StatusBytes(status, "VmHWM"); err != nil {
		return ProcStats{}, fmt.Errorf("%s/status: %w", dir, err)
	}
	return st, nil
}

// ProcCPU returns utime + stime of pid.
func ProcCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	d, err := ParseStat(b)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return d, nil
}

// ProcRSS returns VmRSS of pid in bytes.
func ProcRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	n, err := StatusBytes(b, "VmRSS")
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	return n, nil
}

// ParseStat returns utime + stime of a /proc/PID/stat line. The command
// name (field 2) is in parentheses and may itself hold spaces and
// parentheses, so the fields are counted from the last ')'.
func ParseStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("no ')' after the command name")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(f))
	}
	var ticks uint64
	for _, s := range f[11:13] {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("utime/stime %q: %w", s, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// StatusBytes returns the "Key:   N kB" line of /proc/PID/status in bytes.
func StatusBytes(b []byte, key string) (int64, error) {
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != key {
			continue
		}
		v = strings.TrimSpace(v)
		num, unit, _ := strings.Cut(v, " ")
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || (unit != "kB" && unit != "") {
			return 0, fmt.Errorf("%s: %q is not a size in kB", key, v)
		}
		if unit == "kB" {
			n <<= 10
		}
		return n, nil
	}
	return 0, fmt.Errorf("no %s line", key)
}

// RunWait sums, over pid's threads, the time they were runnable but
// waited for a CPU (the second field of /proc/PID/task/TID/schedstat, in
// ns): how much the machine's other work kept the process off the cores.
// Threads that have exited are not counted.
func RunWait(pid int) (time.Duration, error) {
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
		w, err := ParseSchedstatWait(b)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", t, err)
		}
		total += w
	}
	return total, nil
}

// ParseSchedstatWait returns the run-queue wait of a schedstat line.
func ParseSchedstatWait(b []byte) (time.Duration, error) {
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

// SelfCPU is this process' user plus system CPU time.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// LoadAvg returns the 1, 5 and 15 min load averages ("" if unknown): the
// machine is shared, and reports say how much.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// procField returns the value of the first "key: value" line of a /proc
// file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// RSSWatch samples a process' RSS at an interval until End and keeps the
// peak (VmHWM cannot be reset between phases, this can).
type RSSWatch struct {
	pid  int
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex // guards peak
	peak int64
}

// WatchRSS starts sampling pid's RSS every interval.
func WatchRSS(pid int, every time.Duration) *RSSWatch {
	w := &RSSWatch{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
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

func (w *RSSWatch) sample() {
	if n, err := ProcRSS(w.pid); err == nil {
		w.mu.Lock()
		w.peak = max(w.peak, n)
		w.mu.Unlock()
	}
}

// End stops the sampling and returns the peak and the current RSS.
func (w *RSSWatch) End() (peak, now int64) {
	close(w.stop)
	<-w.done
	now, _ = ProcRSS(w.pid)
	w.mu.Lock()
	defer w.mu.Unlock()
	return max(w.peak, now), now
}
