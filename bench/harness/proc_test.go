package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// Fields after the command: state ppid pgrp session tty_nr tpgid flags
	// minflt cminflt majflt cmajflt utime stime …
	rest := " S 1 2 3 4 5 6 7 8 9 10 250 130 0 0 20 0 9 0 100 200 300"
	for _, tc := range []struct {
		line    string
		want    time.Duration
		wantErr string
	}{
		{"42 (victoria-metr)" + rest, 3800 * time.Millisecond, ""},
		{"42 (a) b (c))" + rest, 3800 * time.Millisecond, ""}, // ')' and spaces in the name
		{"42 (x) S 1 2", 0, "fields after"},
		{"42 x S", 0, "no ')'"},
		{"42 (x) S 1 2 3 4 5 6 7 8 9 10 -1 2", 0, "utime/stime"},
	} {
		got, err := ParseStat([]byte(tc.line))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseStat(%q) = %v, %v; want an error with %q", tc.line, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseStat(%q) = %v, %v; want %v", tc.line, got, err, tc.want)
		}
	}
}

const fakeStatus = `Name:	aerie
Umask:	0022
State:	S (sleeping)
VmPeak:	 2391880 kB
VmHWM:	  123456 kB
VmRSS:	   65536 kB
Threads:	9
`

func TestReadProc(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "4242")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "stat"), []byte("4242 (aerie) S 1 2 3 4 5 6 7 8 9 10 1000 500 0 0 20 0 9 0 100\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "status"), []byte(fakeStatus), 0o644)
	st, err := ReadProc(root, 4242)
	if err != nil {
		t.Fatal(err)
	}
	if want := (ProcStats{CPU: 15 * time.Second, RSS: 65536 << 10, HWM: 123456 << 10}); st != want {
		t.Fatalf("readProc = %+v, want %+v", st, want)
	}
	if _, err := ReadProc(root, 1); err == nil {
		t.Fatal("a missing process gave no error")
	}
	os.WriteFile(filepath.Join(dir, "status"), []byte("Name:\taerie\nVmRSS:\t12 MB\n"), 0o644)
	if _, err := ReadProc(root, 4242); err == nil || !strings.Contains(err.Error(), "VmRSS") {
		t.Fatalf("a bad VmRSS line: %v", err)
	}
}

// TestReadProcSelf reads this process: the real file has the fields.
func TestReadProcSelf(t *testing.T) {
	st, err := ReadProc("/proc", os.Getpid())
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	if st.RSS <= 0 || st.HWM < st.RSS {
		t.Fatalf("%+v", st)
	}
}

func TestDiskUsageAndCopy(t *testing.T) {
	dir := t.TempDir()
	for path, size := range map[string]int{"wal/00000001": 100, "wal-backfill/x": 5, "blocks/b1/data": 40, "blocks/b1/index": 2, "tagdict": 3} {
		p := filepath.Join(dir, path)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("tagdict", filepath.Join(dir, "link")) // not a regular file: not counted
	total, byTop, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if total != 150 || byTop["wal"] != 100 || byTop["wal-backfill"] != 5 || byTop["blocks"] != 42 || byTop["tagdict"] != 3 || len(byTop) != 4 {
		t.Fatalf("total %d, by entry %v", total, byTop)
	}
	cp := filepath.Join(t.TempDir(), "copy")
	if err := CopyDir(dir, cp); err != nil {
		t.Fatal(err)
	}
	total2, byTop2, err := DiskUsage(cp)
	if err != nil || total2 != 150 || len(byTop2) != 4 {
		t.Fatalf("copy: %d %v %v", total2, byTop2, err)
	}
	// A sparse file (a results cache created at its capacity) counts what
	// the file system holds, not its length.
	f, err := os.Create(filepath.Join(dir, "cache"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if total, _, err = DiskUsage(dir); err != nil || total > 150+64<<10 {
		t.Fatalf("with a sparse 64 MiB file: %d bytes, %v", total, err)
	}
}

func TestSchedstatAndSelf(t *testing.T) {
	w, err := ParseSchedstatWait([]byte("5526528 12028481 9\n"))
	if err != nil || w != 12028481*time.Nanosecond {
		t.Fatalf("ParseSchedstatWait = %v, %v", w, err)
	}
	if _, err := ParseSchedstatWait([]byte("1 2\n")); err == nil || !strings.Contains(err.Error(), "3 fields") {
		t.Fatalf("two fields: %v", err)
	}
	if _, err := RunWait(os.Getpid()); err != nil {
		t.Skipf("no schedstat: %v", err)
	}
	if rss, err := ProcRSS(os.Getpid()); err != nil || rss <= 0 {
		t.Fatalf("ProcRSS = %d, %v", rss, err)
	}
	if _, err := StatusBytes([]byte("Name:\tx\n"), "VmRSS"); err == nil || !strings.Contains(err.Error(), "no VmRSS") {
		t.Fatalf("no VmRSS line: %v", err)
	}
	peak, now := WatchRSS(os.Getpid(), time.Millisecond).End()
	if peak < now || now <= 0 {
		t.Fatalf("WatchRSS: peak %d, now %d", peak, now)
	}
}
