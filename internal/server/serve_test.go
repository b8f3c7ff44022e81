package server

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/server/servertest"
)

// serveForTest starts a server with opts (HTTPAddr free on 127.0.0.1 when
// empty), waits until it is ready and stops it when the test ends, or when
// the test calls Stop to restart it on the same data.
func serveForTest(t testing.TB, opts Options) (*Server, *servertest.Running) {
	t.Helper()
	if opts.HTTPAddr == "" {
		opts.HTTPAddr = servertest.FreeAddr(t)
	}
	s, err := New(opts)
	require.NoError(t, err)
	return s, servertest.Start(t, s)
}
