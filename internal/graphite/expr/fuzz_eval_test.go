package expr

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// FuzzEval evaluates arbitrary targets over a small store: no panic, and
// every series returned keeps invariant 2 (End = Start + len(Values)*Step).
func FuzzEval(f *testing.F) {
	for _, s := range []string{
		"sumSeries(a.*.*)", "movingAverage(a.b.c,2)", "summarize(a.b.c,'20s','max',true)", "hitcount(b.c,'15s',true)",
		"asPercent(a.*.*,a.b.c)", "groupByNodes(a.*.*,'sum',0,-1)", "timeStack(a.b.c,'10s',-2,2)", "delay(a.b.c,-9)",
		"substr(scale(a.b.c,1),-5,9)", "aliasSub(a.b.c,'(b)','\\1\\g<1>$')", "keepLastValue(a.b.d,0)", "stdev(a.b.d,3,0)",
		"smartSummarize(b.c,'25s','avg','hours')", "removeBelowPercentile(a.*.*,99)", "legendValue(a.b.c,'count','x')",
		"applyByNode(a.*.*,-9,'%')", "perSecond(ctr,1,2)", "timeSlice(a.b.c,'-1h','now')", "divideSeries(a.b.c,a.x.c)",
		"log(a.y.c,2)", "nPercentile(a.x.c,1)", "aggregateLine(a.x.c,'count',true)", "sortByName(a.*.*,true,true)",
	} {
		f.Add(s, int64(0), int64(60))
	}
	// Every reference target seeds the corpus too.
	if fh, err := os.Open(filepath.Join("testdata", "graphiteweb", "targets.txt")); err == nil {
		defer fh.Close()
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			parts := strings.SplitN(sc.Text(), " ", 3)
			if len(parts) != 3 || strings.HasPrefix(parts[0], "#") {
				continue
			}
			from, _ := strconv.ParseInt(parts[0], 10, 64)
			until, _ := strconv.ParseInt(parts[1], 10, 64)
			f.Add(parts[2], from, until)
		}
	}
	f.Fuzz(func(t *testing.T, target string, from, until int64) {
		e, err := Parse(target)
		if err != nil {
			return
		}
		if from < -1<<40 || until > 1<<40 {
			return
		}
		got, err := Eval(context.Background(), e, from, until, until, refStore(t))
		if err != nil {
			return
		}
		for _, s := range got {
			if s.Step <= 0 || s.End != s.Start+int64(len(s.Values))*s.Step {
				t.Fatalf("%s: series %q start %d end %d step %d with %d values", target, s.Name, s.Start, s.End, s.Step, len(s.Values))
			}
		}
	})
}
