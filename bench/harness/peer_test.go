package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets this test binary serve as a peer: with HARNESS_PEER set
// it runs the mode it names instead of the tests.
func TestMain(m *testing.M) {
	switch os.Getenv("HARNESS_PEER") {
	case "":
		os.Exit(m.Run())
	case "http": // serves /ready on its address until SIGTERM
		fmt.Println("peer up")
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		go func() { <-term; os.Exit(0) }()
		l, err := net.Listen("tcp", os.Args[len(os.Args)-1])
		if err != nil {
			fmt.Println(err)
			os.Exit(3)
		}
		http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/ready" {
				http.NotFound(w, r)
			}
		}))
	case "exit": // fails at once
		fmt.Println("bad flag -x")
		os.Exit(2)
	case "stubborn": // ignores SIGTERM
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ignoring SIGTERM")
		select {}
	}
}

func self(t *testing.T, mode string) PeerSpec {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return PeerSpec{
		Name: mode, Bin: bin, ReadyPath: "/ready", Env: []string{"HARNESS_PEER=" + mode},
		Args: func(dir string, addrs []string) ([]string, error) {
			return []string{"-test.run=^$", addrs[0]}, nil
		},
	}
}

func TestFleetStartStop(t *testing.T) {
	root := t.TempDir()
	f := NewFleet(root, nil)
	defer f.StopAll()
	p, err := f.Start(context.Background(), self(t, "http"), "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Dir != filepath.Join(root, "http") {
		t.Errorf("data directory %s", p.Dir)
	}
	resp, err := http.Get(p.URL("/ready"))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /ready: %v %v", resp, err)
	}
	resp.Body.Close()
	if st, err := p.Stats(); err != nil || st.RSS <= 0 {
		t.Fatalf("Stats: %+v %v", st, err)
	}
	if err := p.Alive(); err != nil {
		t.Fatal(err)
	}
	if err := f.Stop(p); err != nil {
		t.Fatal(err)
	}
	if err := p.Alive(); err == nil {
		t.Fatal("alive after Stop")
	}
	if err := p.Stop(); err != nil { // a no-op
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p.LogPath); !strings.Contains(string(b), "peer up") {
		t.Fatalf("log %q", b)
	}
}

func TestPeerExitsBeforeReady(t *testing.T) {
	f := NewFleet(t.TempDir(), nil)
	defer f.StopAll()
	_, err := f.Start(context.Background(), self(t, "exit"), "")
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "bad flag -x") {
		t.Fatalf("error %v, want ErrExited with the log's tail", err)
	}
}

func TestPeerNotReadyAndKilled(t *testing.T) {
	spec := self(t, "stubborn")
	spec.ReadyTimeout = 300 * time.Millisecond
	spec.StopGrace = 100 * time.Millisecond
	_, err := StartPeer(context.Background(), spec, t.TempDir(), filepath.Join(t.TempDir(), "log"))
	if err == nil || !strings.Contains(err.Error(), "not ready after") {
		t.Fatalf("error %v", err)
	}
	spec.Ready = func(_ context.Context, p *Peer) error {
		if b, _ := os.ReadFile(p.LogPath); !strings.Contains(string(b), "ignoring") {
			return errors.New("not yet")
		}
		return nil
	}
	spec.ReadyTimeout = time.Minute
	p, err := StartPeer(context.Background(), spec, t.TempDir(), filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Stop of a peer ignoring SIGTERM: %v", err)
	}
}

func TestStartMissingBinary(t *testing.T) {
	spec := self(t, "http")
	spec.Bin = filepath.Join(t.TempDir(), "none")
	_, err := StartPeer(context.Background(), spec, t.TempDir(), filepath.Join(t.TempDir(), "log"))
	if !errors.Is(err, exec.ErrNotFound) && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("error %v", err)
	}
}
