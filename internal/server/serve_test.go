package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// serveForTest starts a server with opts (HTTPAddr free on 127.0.0.1 when
// empty), waits until it is ready and stops it when the test ends. It
// returns the server and its base URL.
func serveForTest(t *testing.T, opts Options) (*Server, string) {
	t.Helper()
	if opts.HTTPAddr == "" {
		opts.HTTPAddr = freeAddr(t)
	}
	s, err := New(opts)
	require.NoError(t, err)
	require.NoError(t, s.Listen())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
	base := "http://" + opts.HTTPAddr
	require.Eventually(t, func() bool { c, _ := get(t, base+"/-/ready"); return c == 200 }, 10*time.Second, 50*time.Millisecond)
	return s, base
}
