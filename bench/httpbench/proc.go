package httpbench

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat:
// 100 on every Linux architecture Go supports (sysconf(_SC_CLK_TCK) needs
// cgo).
const clockTicks = 100

// procStats is what the kernel says about a process.
type procStats struct {
	cpu time.Duration // utime + stime
	rss int64         // VmRSS, bytes
	hwm int64         // VmHWM (peak resident set), bytes
}

// readProc reads /proc/PID/stat and /proc/PID/status under root ("/proc").
func readProc(root string, pid int) (procStats, error) {
	dir := filepath.Join(root, strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return procStats{}, err
	}
	cpu, err := parseStat(stat)
	if err != nil {
		return procStats{}, fmt.Errorf("%s/stat: %w", dir, err)
	}
	status, err := os.ReadFile(filepath.Join(dir, "status"))
	if err != nil {
		return procStats{}, err
	}
	st := procStats{cpu: cpu}
	if st.rss, err = statusBytes(status, "VmRSS"); err != nil {
		return procStats{}, fmt.Errorf("%s/status: %w", dir, err)
	}
	if st.hwm, err = statusBytes(status, "VmHWM"); err != nil {
		return procStats{}, fmt.Errorf("%s/status: %w", dir, err)
	}
	return st, nil
}

// parseStat returns utime + stime of a /proc/PID/stat line. The command
// name (field 2) is in parentheses and may itself hold spaces and
// parentheses, so the fields are counted from the last ')'.
func parseStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("no ')' after the command name")
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

// statusBytes returns the "Key:   N kB" line of /proc/PID/status in bytes.
func statusBytes(b []byte, key string) (int64, error) {
	for _, line := range strings.Split(string(b), "\n") {
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

// diskUsage returns the bytes of the regular files under dir, in all
// and by the top-level entry of dir they are in.
func diskUsage(dir string) (total int64, byTop map[string]int64, err error) {
	byTop = map[string]int64{}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
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

// copyDir copies the regular files and directories of src into dst,
// which must not exist.
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type().IsRegular():
			return copyFile(path, to)
		}
		return nil
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
