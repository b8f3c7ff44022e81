package tsdb

import (
	"bufio"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

const crashChildEnv = "AERIE_CRASH_CHILD_DIR"

// crashSeries returns the label set of series s of target g.
func crashSeries(g, s int) labels.Labels {
	return labels.FromStrings("__name__", fmt.Sprintf("m%d", s), "job", "crash", "instance", strconv.Itoa(g))
}

// crashValue is the value of series s at row i: derived, so the parent can
// check it.
func crashValue(g, s int, i int64) float64 { return float64(i)*1.5 + float64(g*100+s) }

// TestCrashChild is the child of TestCrashKill9: it appends rows forever
// and prints "ack G I" after each commit of row I of target G returned.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("run by TestCrashKill9")
	}
	db, err := Open(dir, &Options{PartitionRange: 60_000, OOOWindow: 10_000, FlushCheckInterval: 20 * time.Millisecond, WALSegmentSize: 64 << 10})
	if err != nil {
		fmt.Println("open error:", err)
		os.Exit(2)
	}
	start := int64(0)
	if mt := db.Head().MaxTime(); mt != math.MinInt64 {
		start = mt/1000 + 1
	} else if bs := db.Blocks(); len(bs) > 0 {
		start = bs[len(bs)-1].MaxTime/1000 + 1
	}
	out := bufio.NewWriter(os.Stdout)
	for i := start; ; i++ {
		for g := 0; g < 4; g++ {
			app := db.RowAppender()
			for s := 0; s < 10; s++ {
				if err := app.Append(crashSeries(g, s), i*1000, crashValue(g, s, i)); err != nil {
					fmt.Println("append error:", err)
					os.Exit(2)
				}
			}
			if err := app.Commit(); err != nil {
				fmt.Println("commit error:", err)
				os.Exit(2)
			}
			fmt.Fprintf(out, "ack %d %d\n", g, i)
			out.Flush()
		}
	}
}

// TestCrashKill9 kills a child that appends with acknowledgements at
// random points and checks that every acknowledged row survives.
func TestCrashKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	iterations := 20
	if s := os.Getenv("AERIE_CRASH_ITERATIONS"); s != "" {
		iterations, _ = strconv.Atoi(s)
	}
	dir := t.TempDir()
	acked := map[int]map[int64]bool{} // target → acknowledged rows
	killLoop(t, "TestCrashChild", crashChildEnv, dir, iterations, 50, 400, func(l string) {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "ack" {
			g, _ := strconv.Atoi(f[1])
			i, _ := strconv.ParseInt(f[2], 10, 64)
			ackRow(acked, g, i)
		}
	}, func(it int) { verifyCrashDir(t, dir, acked, it) })
	n := 0
	for _, rows := range acked {
		n += len(rows)
	}
	t.Logf("%d kills, %d acknowledged rows verified after each", iterations, n)
}

// killLoop runs the test child (a TestXxx that skips unless env names its
// data directory) iterations times: it hands every line the child prints
// to handle, kills it with SIGKILL after a random [minMs, minMs+spreadMs)
// ms, hands the lines printed before the kill too, and calls verify. A
// line with "error" before the kill fails the test.
func killLoop(t *testing.T, child, env, dir string, iterations, minMs, spreadMs int, handle func(string), verify func(it int)) {
	t.Helper()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for it := 0; it < iterations; it++ {
		cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.v")
		cmd.Env = append(os.Environ(), env+"="+dir)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		lines := make(chan string, 1024)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		deadline := time.After(time.Duration(minMs+rng.Intn(spreadMs)) * time.Millisecond)
	read:
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					break read
				}
				if strings.Contains(l, "error") {
					t.Fatalf("child: %s", l)
				}
				handle(l)
			case <-deadline:
				break read
			}
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		for l := range lines { // lines printed before the kill count too
			handle(l)
		}
		cmd.Wait()
		verify(it)
	}
}

func ackRow(acked map[int]map[int64]bool, g int, i int64) {
	if acked[g] == nil {
		acked[g] = map[int64]bool{}
	}
	acked[g][i] = true
}

func verifyCrashDir(t *testing.T, dir string, acked map[int]map[int64]bool, it int) {
	t.Helper()
	db, err := Open(dir, &Options{PartitionRange: 60_000, OOOWindow: 10_000, FlushCheckInterval: -1, WALSegmentSize: 64 << 10})
	require.NoError(t, err, "iteration %d: reopen", it)
	defer db.Close()
	for g, rows := range acked {
		for s := 0; s < 10; s++ {
			got := query(t, db, math.MinInt64, math.MaxInt64,
				labels.MustNewMatcher(labels.MatchEqual, "__name__", fmt.Sprintf("m%d", s)),
				labels.MustNewMatcher(labels.MatchEqual, "instance", strconv.Itoa(g)))
			samples := got[crashSeries(g, s).String()]
			require.NotEmpty(t, samples, "iteration %d: series %d/%d lost", it, g, s)
			byT := map[int64]float64{}
			for _, x := range samples {
				byT[x.t] = x.v
			}
			for i := range rows {
				v, ok := byT[i*1000]
				require.True(t, ok, "iteration %d: acknowledged row %d of target %d series %d lost", it, i, g, s)
				require.Equal(t, crashValue(g, s, i), v)
			}
		}
	}
}
