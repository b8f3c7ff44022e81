// Package s3test starts a real S3 server for tests: versitygw
// (github.com/versity/versitygw) with its posix backend in a temporary
// directory, on a free port of 127.0.0.1, with fixed root keys and one
// bucket.
//
// Start finds the versitygw binary in $(go env GOPATH)/bin or on PATH
// (scripts/install-deps.sh installs it). Without it, Start skips the test,
// unless the CI or AERIE_REQUIRE_S3 environment variable is set: then it
// fails the test with how to install it.
//
// versitygw runs with --sidecar metadata, so the temporary directory needs
// no extended-attribute support, and with path-style bucket addressing
// (its default without --virtual-domain), which Config asks the S3
// provider for.
package s3test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/aerie-db/aerie/internal/bucket"
)

// The server's fixed credentials, region and bucket.
const (
	AccessKey  = "aerie-test-access"
	SecretKey  = "aerie-test-secret-key"
	Region     = "us-east-1"
	BucketName = "aerie-test"
)

// Version is the versitygw release the tests are written against.
const Version = "v1.8.0"

const installHint = "install it with scripts/install-deps.sh, or: go install github.com/versity/versitygw/cmd/versitygw@" + Version

// Server is a running versitygw.
type Server struct {
	// Endpoint is the S3 API's host:port; the scheme is http.
	Endpoint  string
	Bucket    string
	AccessKey string
	SecretKey string
	// Dir is the posix backend's root: object o of the bucket is the file
	// Dir/Bucket/o.
	Dir string
}

// Config returns a config of the S3 provider for the server's bucket:
// plain http, path-style addressing, the root keys.
func (s *Server) Config() bucket.Config {
	return bucket.Config{
		Type: "S3",
		Config: map[string]any{
			"bucket":             s.Bucket,
			"endpoint":           s.Endpoint,
			"region":             Region,
			"access_key":         s.AccessKey,
			"secret_key":         s.SecretKey,
			"insecure":           true,
			"bucket_lookup_type": "path",
		},
	}
}

// Start starts versitygw and creates the bucket; t.Cleanup stops the
// server and fails the test if it does not exit cleanly.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		if os.Getenv("CI") != "" || os.Getenv("AERIE_REQUIRE_S3") != "" {
			t.Fatalf("s3test: %v; %s", err, installHint)
		}
		t.Skipf("s3test: %v; %s (set AERIE_REQUIRE_S3=1 to fail instead of skipping)", err, installHint)
	}
	root := t.TempDir()
	gwroot, sidecar := filepath.Join(root, "gw"), filepath.Join(root, "meta")
	for _, d := range []string{gwroot, sidecar} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A free port can be taken between its probe and versitygw's bind:
	// try a few.
	var p *process
	for try := 0; ; try++ {
		addr, err := freeAddr()
		if err != nil {
			t.Fatalf("s3test: %v", err)
		}
		p, err = startProcess(bin, addr, gwroot, sidecar)
		if err == nil {
			break
		}
		if try == 2 {
			t.Fatalf("s3test: %v", err)
		}
	}
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Errorf("s3test: %v", err)
		}
	})
	s := &Server{Endpoint: p.addr, Bucket: BucketName, AccessKey: AccessKey, SecretKey: SecretKey, Dir: gwroot}
	if err := s.makeBucket(); err != nil {
		t.Fatalf("s3test: create bucket %s: %v\nversitygw output:\n%s", s.Bucket, err, p.out.String())
	}
	return s
}

// Binary returns the path of the versitygw binary: the one in
// $(go env GOPATH)/bin, else the one on PATH.
func Binary() (string, error) {
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, dir := range filepath.SplitList(strings.TrimSpace(string(out))) {
			bin := filepath.Join(dir, "bin", "versitygw")
			if fi, err := os.Stat(bin); err == nil && !fi.IsDir() {
				return bin, nil
			}
		}
	}
	bin, err := exec.LookPath("versitygw")
	if err != nil {
		return "", errors.New("no versitygw in $(go env GOPATH)/bin or on PATH")
	}
	return bin, nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

type process struct {
	addr    string
	cmd     *exec.Cmd
	out     *syncBuffer
	exited  chan struct{} // closed when cmd.Wait returns; then waitErr is set
	waitErr error
}

func startProcess(bin, addr, gwroot, sidecar string) (*process, error) {
	cmd := exec.Command(bin,
		"--port", addr,
		"--access", AccessKey, "--secret", SecretKey,
		"--region", Region,
		"--health", "/health",
		"--keep-alive",
		"--quiet",
		"posix", "--sidecar", sidecar, gwroot)
	// versitygw reads ROOT_* and VGW_* variables as flag defaults; keep the
	// caller's out of the test server.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "VGW_") && !strings.HasPrefix(kv, "ROOT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	p := &process{addr: addr, cmd: cmd, out: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start versitygw: %w", err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	if err := p.waitReady(15 * time.Second); err != nil {
		_ = p.stop()
		return nil, fmt.Errorf("versitygw on %s: %w\nversitygw output:\n%s", addr, err, p.out.String())
	}
	return p, nil
}

// waitReady polls the health endpoint until it answers 200.
func (p *process) waitReady(timeout time.Duration) error {
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := c.Get("http://" + p.addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("exited before it was ready: %v", p.waitErr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s (last: %v)", timeout, err)
		}
	}
}

// stop sends SIGTERM and waits for the exit; it kills the process if it
// has not exited within 10 s. It reports an exit other than a clean one
// after SIGTERM, and an exit before stop was called.
func (p *process) stop() error {
	select {
	case <-p.exited:
		return fmt.Errorf("versitygw exited during the test: %v\nversitygw output:\n%s", p.waitErr, p.out.String())
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop versitygw: %w", err)
	}
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("versitygw did not exit within 10 s of SIGTERM; killed\nversitygw output:\n%s", p.out.String())
	}
	if p.waitErr != nil {
		return fmt.Errorf("versitygw exited with %v after SIGTERM\nversitygw output:\n%s", p.waitErr, p.out.String())
	}
	return nil
}

func (s *Server) makeBucket() error {
	c, err := minio.New(s.Endpoint, &minio.Options{
		Creds:        credentials.NewStaticV4(s.AccessKey, s.SecretKey, ""),
		Secure:       false,
		Region:       Region,
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return c.MakeBucket(ctx, s.Bucket, minio.MakeBucketOptions{Region: Region})
}

// syncBuffer is a bytes.Buffer that the process's output goroutines and
// the test may use at once.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
