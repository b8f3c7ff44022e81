package positive

import (
	"testing"
	"time"
)

func TestOr(t *testing.T) {
	f := func(v, def, want int64) {
		t.Helper()
		if got := Or(v, def); got != want {
			t.Fatalf("Or(%d, %d) = %d, want %d", v, def, got, want)
		}
	}
	f(5, 10, 5)
	f(0, 10, 10)
	f(-1, 10, 10)
	if got := Or(-time.Second, time.Minute); got != time.Minute {
		t.Fatalf("Or(-1s, 1m) = %v", got)
	}
}
