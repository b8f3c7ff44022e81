// Package pgtest runs a throwaway PostgreSQL server for tests: initdb in a
// temporary directory, postgres on 127.0.0.1 with a free port and its unix
// socket in that directory, trust authentication, fsync off.
//
// Start finds initdb and postgres in $AERIE_PG_BIN, else in the newest
// /usr/lib/postgresql/*/bin (Debian's postgresql package, which
// scripts/install-deps.sh installs), else on PATH. Without them it skips
// the test, unless the CI or AERIE_REQUIRE_PG environment variable is set:
// then it fails the test.
//
// initdb and postgres refuse to run as root. As root, pgtest runs them as
// the postgres user (created by the Debian package), else as nobody, in a
// directory it gives to that user; the test process itself stays root.
//
// The server is a child of the test process and gets SIGQUIT (immediate
// shutdown) if the test process dies; t.Cleanup stops it and removes the
// directory. Shared is one server for many tests of a package (each with
// its own database), stopped from TestMain.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Superuser is the name of the cluster's superuser.
const Superuser = "postgres"

const installHint = "install Debian's postgresql package (scripts/install-deps.sh does)"

// Server is a running (or stopped) PostgreSQL cluster.
type Server struct {
	// Dir holds the data directory (Dir/data), the socket (Dir/sock) and
	// the server log (Dir/log).
	Dir  string
	Port int

	bin  string
	cred *syscall.Credential // nil: run as ourselves
	cmd  *exec.Cmd           // nil while stopped
	wait chan error          // cmd.Wait's result
	log  *os.File
}

// Start initializes and starts a cluster; t.Cleanup stops it.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := binDir(t)
	s, err := start(bin)
	if s != nil {
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("pgtest: %v", err)
			}
		})
	}
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return s
}

// binDir returns BinDir, or skips t (fails it under CI or
// AERIE_REQUIRE_PG).
func binDir(t testing.TB) string {
	t.Helper()
	bin, err := BinDir()
	if err != nil {
		if os.Getenv("CI") != "" || os.Getenv("AERIE_REQUIRE_PG") != "" {
			t.Fatalf("pgtest: %v; %s", err, installHint)
		}
		t.Skipf("pgtest: %v; %s (set AERIE_REQUIRE_PG=1 to fail instead of skipping)", err, installHint)
	}
	return bin
}

// Shared is one cluster for the tests of a package that do not stop it
// (give each test its own database with CreateDB): it starts on the first
// Get and stops on Close, which TestMain calls after m.Run.
type Shared struct {
	mu  sync.Mutex // guards following
	s   *Server
	err error
}

// Get returns the shared cluster, starting it on first use; it skips or
// fails t as Start does.
func (sh *Shared) Get(t testing.TB) *Server {
	t.Helper()
	bin := binDir(t)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.s == nil && sh.err == nil {
		s, err := start(bin)
		if err != nil && s != nil {
			err = errors.Join(err, s.Close())
			s = nil
		}
		sh.s, sh.err = s, err
	}
	if sh.err != nil {
		t.Fatalf("pgtest: %v", sh.err)
	}
	return sh.s
}

// Close stops the cluster if it was started.
func (sh *Shared) Close() error {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.s == nil {
		return nil
	}
	err := sh.s.Close()
	sh.s = nil
	return err
}

// BinDir returns the directory of initdb and postgres.
func BinDir() (string, error) {
	if d := os.Getenv("AERIE_PG_BIN"); d != "" {
		return d, checkBin(d)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return majorOf(b) - majorOf(a) })
	for _, d := range dirs {
		if checkBin(d) == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		d := filepath.Dir(p)
		return d, checkBin(d)
	}
	return "", errors.New("no initdb and postgres in $AERIE_PG_BIN, /usr/lib/postgresql/*/bin or on PATH")
}

func majorOf(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func checkBin(dir string) error {
	for _, name := range []string{"initdb", "postgres"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() {
			return fmt.Errorf("no %s in %s", name, dir)
		}
	}
	return nil
}

func start(bin string) (*Server, error) {
	dir, err := os.MkdirTemp("", "aerie-pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, bin: bin}
	if os.Getuid() == 0 {
		if s.cred, err = unprivileged(); err != nil {
			return s, err
		}
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return s, err
		}
	}
	for _, sub := range []string{"sock"} {
		if err := s.mkdir(filepath.Join(dir, sub)); err != nil {
			return s, err
		}
	}
	if s.log, err = os.OpenFile(filepath.Join(dir, "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return s, err
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", s.dataDir(), "-U", Superuser, "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	initdb.Dir = dir
	initdb.Env = append(os.Environ(), "LC_ALL=C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return s, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	// A free port can be taken between its probe and postgres's bind: try
	// a few.
	for try := 0; ; try++ {
		if s.Port, err = freePort(); err != nil {
			return s, err
		}
		if err = s.Restart(); err == nil {
			return s, nil
		}
		if try == 2 {
			return s, err
		}
	}
}

// unprivileged returns the credentials of the postgres user, else nobody.
func unprivileged() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
	}
	return nil, errors.New("running as root, and there is no postgres or nobody user to run initdb as")
}

func (s *Server) mkdir(d string) error {
	if err := os.Mkdir(d, 0o700); err != nil {
		return err
	}
	if s.cred != nil {
		return os.Chown(d, int(s.cred.Uid), int(s.cred.Gid))
	}
	return nil
}

func (s *Server) dataDir() string { return filepath.Join(s.Dir, "data") }

// SocketDir is the directory of the server's unix socket.
func (s *Server) SocketDir() string { return filepath.Join(s.Dir, "sock") }

// DSN returns a connection string for database db over TCP.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=%s dbname=%s sslmode=disable connect_timeout=5", s.Port, Superuser, db)
}

// CreateDB creates database name and returns its DSN.
func (s *Server) CreateDB(t testing.TB, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	return s.DSN(name)
}

// Stop shuts the server down (fast shutdown: sessions are ended, the
// data is kept).
func (s *Server) Stop() error {
	if s.cmd == nil {
		return nil
	}
	cmd, exited := s.cmd, s.wait
	s.cmd = nil
	_ = cmd.Process.Signal(syscall.SIGINT) // fails only if it has exited
	select {
	case err := <-exited:
		if err != nil {
			return fmt.Errorf("postgres exited with %v; log:\n%s", err, s.Log())
		}
		return nil
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		<-exited
		return fmt.Errorf("postgres did not stop in 60s; log:\n%s", s.Log())
	}
}

// Restart starts a stopped server on the same port and waits until it
// accepts connections.
func (s *Server) Restart() error {
	if s.cmd != nil {
		return errors.New("postgres is running")
	}
	cmd := exec.Command(filepath.Join(s.bin, "postgres"), "-D", s.dataDir(),
		"-p", strconv.Itoa(s.Port), "-k", s.SocketDir(),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=40", "-c", "shared_buffers=16MB")
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.Stdout, cmd.Stderr = s.log, s.log
	cmd.SysProcAttr = sysProcAttr(s.cred)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	s.cmd = cmd
	s.wait = make(chan error, 1)
	go func(ch chan<- error) { ch <- cmd.Wait() }(s.wait)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := pgx.Connect(ctx, s.DSN("postgres"))
		if err == nil {
			_ = c.Close(ctx)
			cancel()
			return nil
		}
		cancel()
		if len(s.wait) > 0 || time.Now().After(deadline) {
			stopErr := s.Stop()
			return fmt.Errorf("postgres on port %d not ready: %v (%v); log:\n%s", s.Port, err, stopErr, s.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Log returns the server log.
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "log"))
	return strings.TrimSpace(string(b))
}

// Close stops the server and removes its directory.
func (s *Server) Close() error {
	err := s.Stop()
	if s.log != nil {
		s.log.Close()
	}
	if rmErr := os.RemoveAll(s.Dir); err == nil {
		err = rmErr
	}
	return err
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
