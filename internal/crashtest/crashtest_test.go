package crashtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const childEnv = "AERIE_CRASHTEST_CHILD_DIR"

// TestChild is the child of TestKillLoop: it appends its run's number to
// DIR/runs, then acknowledges rows of two targets forever.
func TestChild(t *testing.T) {
	dir := ChildDir(t, childEnv)
	f, err := os.OpenFile(filepath.Join(dir, "runs"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	Check("open", err)
	fmt.Fprintln(f, "run")
	f.Close()
	for i := int64(0); ; i++ {
		Ack(int(i%2), i)
		time.Sleep(time.Millisecond)
	}
}

func TestKillLoop(t *testing.T) {
	dir := t.TempDir()
	acked := Acks{}
	var others []string
	var verified []int
	runs := func() int {
		b, err := os.ReadFile(filepath.Join(dir, "runs"))
		if os.IsNotExist(err) {
			return 0
		}
		require.NoError(t, err)
		return len(b) / 4
	}
	// A second before each kill: a child may be killed before its test
	// starts when the machine is slow (the race detector, a busy CI).
	KillLoop(t, Config{Child: "TestChild", Env: childEnv, Dir: dir, Iterations: 2, MinDelay: time.Second, Spread: 100 * time.Millisecond, Acks: acked},
		func(l string) { others = append(others, l) },
		func(it int) {
			require.LessOrEqual(t, runs(), it+1, "one child per iteration, killed before verify")
			verified = append(verified, it)
		})
	require.Equal(t, []int{0, 1}, verified)
	require.Positive(t, runs())
	require.Len(t, acked, 2)
	require.Positive(t, acked.Rows())
	require.Contains(t, others, "=== RUN   TestChild", "every other line goes to handle")
	for _, l := range others {
		require.False(t, acked.Add(l), "acknowledgement %q went to handle", l)
	}
}

func TestAcks(t *testing.T) {
	a := Acks{}
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{"ack 1 5", true},
		{"ack 1 6", true},
		{"ack 1 5", true},
		{"ack 0 -3", true},
		{"ack 1", false},
		{"ack x 5", false},
		{"nack 1 5", false},
		{"=== RUN   TestChild", false},
	} {
		require.Equal(t, tc.ok, a.Add(tc.line), tc.line)
	}
	require.Equal(t, Acks{1: {5: true, 6: true}, 0: {-3: true}}, a)
	require.Equal(t, 3, a.Rows())
}

func TestIterations(t *testing.T) {
	const env = "AERIE_CRASHTEST_ITERATIONS_TEST"
	require.Equal(t, 7, Iterations(env, 7))
	t.Setenv(env, strconv.Itoa(3))
	require.Equal(t, 3, Iterations(env, 7))
}
