package crashtest

import (
	"bufio"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Config says which child KillLoop runs and when it kills it.
type Config struct {
	// Child is the name of the child's TestXxx in this test binary.
	Child string
	// Env is the environment variable through which the child gets Dir.
	Env string
	// Dir is the data directory, kept across iterations.
	Dir string
	// Iterations is how many children are started and killed.
	Iterations int
	// Each child is killed after a random time in [MinDelay,
	// MinDelay+Spread).
	MinDelay, Spread time.Duration
	// Acks, if not nil, records the child's acknowledgements; KillLoop
	// hands handle only the other lines then.
	Acks Acks
}

// KillLoop runs the child c.Iterations times on c.Dir: it hands every line
// the child prints to c.Acks or handle (which may be nil), kills the child
// with SIGKILL after a random delay, hands the lines printed before the
// kill too, and calls verify with the iteration's number. A line holding
// "error" fails the test.
func KillLoop(t testing.TB, c Config, handle func(line string), verify func(it int)) {
	t.Helper()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for it := 0; it < c.Iterations; it++ {
		runChild(t, c, c.MinDelay+time.Duration(rng.Int63n(int64(c.Spread))), handle)
		verify(it)
	}
}

func runChild(t testing.TB, c Config, killAfter time.Duration, handle func(string)) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+c.Child+"$", "-test.v")
	cmd.Env = append(os.Environ(), c.Env+"="+c.Dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("crashtest: %v", err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("crashtest: start %s: %v", c.Child, err)
	}
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	defer func() {
		// Killed already unless the test failed first; Wait after the
		// last read of the pipe.
		_ = cmd.Process.Kill()
		for range lines {
		}
		_ = cmd.Wait()
	}()
	take := func(l string) {
		if strings.Contains(l, "error") {
			t.Fatalf("child: %s", l)
		}
		if c.Acks != nil && c.Acks.Add(l) || handle == nil {
			return
		}
		handle(l)
	}
	deadline := time.After(killAfter)
read:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				break read
			}
			take(l)
		case <-deadline:
			break read
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("crashtest: kill %s: %v", c.Child, err)
	}
	for l := range lines { // lines printed before the kill count too
		take(l)
	}
}

// Parent is for the parent, before KillLoop: it skips the test under
// -short and returns a new data directory and the number of iterations,
// from the environment variable env or def.
func Parent(t *testing.T, env string, def int) (dir string, iterations int) {
	t.Helper()
	if testing.Short() {
		t.Skip("short")
	}
	return t.TempDir(), Iterations(env, def)
}

// ChildDir is for the child: the data directory its parent passes in the
// environment variable env. Without one the child is skipped, for it was
// not started by KillLoop (a plain go test).
func ChildDir(t testing.TB, env string) string {
	t.Helper()
	dir := os.Getenv(env)
	if dir == "" {
		t.Skip("run by its parent through crashtest.KillLoop")
	}
	return dir
}

// Check is for the child: when err is not nil it prints "what error:
// err", a line that fails the parent's test, and exits with status 2.
func Check(what string, err error) {
	if err != nil {
		fmt.Println(what+" error:", err)
		os.Exit(2)
	}
}

// Ack is for the child: it prints "ack g i", the line Acks reads, once
// the write of row i of target g returned.
func Ack(g int, i int64) { fmt.Printf("ack %d %d\n", g, i) }

// Acks are the rows a child acknowledged, by target: row I of target G
// for each line "ack G I".
type Acks map[int]map[int64]bool

// Add records line's row if it is an acknowledgement and reports whether
// it was one.
func (a Acks) Add(line string) bool {
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "ack" {
		return false
	}
	g, err1 := strconv.Atoi(f[1])
	i, err2 := strconv.ParseInt(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	if a[g] == nil {
		a[g] = map[int64]bool{}
	}
	a[g][i] = true
	return true
}

// Rows is the number of acknowledged rows.
func (a Acks) Rows() int {
	n := 0
	for _, rows := range a {
		n += len(rows)
	}
	return n
}

// Iterations is the number in the environment variable env, or def when it
// is not set.
func Iterations(env string, def int) int {
	if s := os.Getenv(env); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
	}
	return def
}
