package childproc

import (
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func start(t *testing.T, script string) *Proc {
	t.Helper()
	p, err := Start("sh", filepath.Join(t.TempDir(), "sh.log"), exec.Command("sh", "-c", script))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStop(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		diesOnTERM   bool
		grace        time.Duration
		want         string // in Stop's error; "" for nil
	}{
		{"clean exit on TERM", `trap 'exit 0' TERM; echo up; while :; do sleep 0.01; done`, false, 10 * time.Second, ""},
		{"exit 3 on TERM", `trap 'exit 3' TERM; echo up; while :; do sleep 0.01; done`, false, 10 * time.Second, "after SIGTERM: exit status 3"},
		{"dies of TERM", `echo up; exec sleep 60`, false, 10 * time.Second, "after SIGTERM: signal: terminated"},
		{"dies of TERM, no handler", `echo up; exec sleep 60`, true, 10 * time.Second, ""},
		{"ignores TERM", `trap '' TERM; echo up; while :; do sleep 0.01; done`, false, 100 * time.Millisecond, "did not exit after SIGTERM within"},
		{"exited before", `echo up; exit 0`, false, 10 * time.Second, "had exited before it was stopped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := start(t, tc.script)
			p.DiesOnTERM = tc.diesOnTERM
			for !strings.HasSuffix(p.Tail(1), "\nup") {
				time.Sleep(10 * time.Millisecond)
			}
			if tc.want == "had exited before it was stopped" {
				<-p.Done()
			}
			err := p.Stop(tc.grace)
			if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Stop: %v, want %q", err, tc.want)
			}
			if !p.Exited() {
				t.Fatal("not exited after Stop")
			}
			if errors.Is(err, ErrStopTimeout) != strings.Contains(tc.want, "did not exit") {
				t.Fatalf("Stop: %v: errors.Is(ErrStopTimeout) = %v", err, errors.Is(err, ErrStopTimeout))
			}
			if again := p.Stop(tc.grace); again != err {
				t.Fatalf("second Stop: %v, want the first's %v", again, err)
			}
		})
	}
}

// TestTail: the log starts with a line naming the command.
func TestTail(t *testing.T) {
	p := start(t, `for i in 1 2 3 4 5; do echo line$i; done`)
	<-p.Done()
	if err := p.WaitErr(); err != nil {
		t.Fatal(err)
	}
	want := "[... 3 lines before]\nline3\nline4\nline5"
	if got := p.Tail(3); got != want {
		t.Fatalf("Tail(3) = %q, want %q", got, want)
	}
	if got, want := Tail("a\nb\n", 5), "a\nb"; got != want {
		t.Fatalf("Tail = %q, want %q", got, want)
	}
}

// TestStopDumpSignal: a process that ignores SIGTERM gets DumpSignal after
// the grace period, and what it writes then is in its log before SIGKILL.
func TestStopDumpSignal(t *testing.T) {
	p := start(t, `trap '' TERM; trap 'echo dumped; exit 1' QUIT; echo up; while :; do sleep 0.01; done`)
	p.DumpSignal = syscall.SIGQUIT
	for !strings.HasSuffix(p.Tail(1), "\nup") {
		time.Sleep(10 * time.Millisecond)
	}
	err := p.Stop(100 * time.Millisecond)
	if !errors.Is(err, ErrStopTimeout) || !strings.Contains(err.Error(), "sent quit") {
		t.Fatalf("Stop: %v, want ErrStopTimeout naming the dump signal", err)
	}
	if got := p.Tail(1); !strings.HasSuffix(got, "\ndumped") {
		t.Fatalf("log ends %q, want the dump handler's line", got)
	}
}
