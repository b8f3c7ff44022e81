package cachebench

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The HTTP client keeps idle keep-alive connections to servers that
	// have exited; their reader goroutines end with the connections.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"), goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"))
}
