package servertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake is a Server that is ready after readyAfter and returns stopErr
// from Run.
type fake struct {
	ln         net.Listener
	readyAfter time.Duration
	stopErr    error
	stopped    bool
}

func (f *fake) Listen() (err error) {
	f.ln, err = net.Listen("tcp", "127.0.0.1:0")
	return err
}

func (f *fake) Addr() string { return f.ln.Addr().String() }

func (f *fake) Run(ctx context.Context) error {
	readyAt := time.Now().Add(f.readyAfter)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/-/ready" || time.Now().Before(readyAt) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})}
	go srv.Serve(f.ln)
	<-ctx.Done()
	srv.Close()
	f.stopped = true
	return f.stopErr
}

func TestStart(t *testing.T) {
	f := &fake{readyAfter: 200 * time.Millisecond}
	start := time.Now()
	r := Start(t, f)
	require.GreaterOrEqual(t, time.Since(start), f.readyAfter, "Start returned before /-/ready answered 200")
	require.Equal(t, "http://"+f.Addr(), r.URL)
	resp, err := http.Get(r.URL + "/-/ready")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	r.Stop()
	require.True(t, f.stopped)
	r.Stop() // a second Stop, and the cleanup's, do nothing
}

// TestStopReportsRunError: a Run that returns an error fails the test
// that stops the server.
func TestStopReportsRunError(t *testing.T) {
	rec := &recorder{TB: t}
	r := Start(rec, &fake{stopErr: errors.New("boom")})
	r.Stop()
	require.Equal(t, "servertest: the server's Run returned boom", rec.fatal)
}

// recorder is a testing.TB whose Fatalf records the message instead of
// failing the test.
type recorder struct {
	testing.TB
	fatal string
}

func (r *recorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }

func TestFreeAddr(t *testing.T) {
	addr := FreeAddr(t)
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	ln.Close()
}
