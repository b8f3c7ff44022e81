package graphitetest

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestNormalizeTagged(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a.b.c", "a.b.c"},
		{"disk.used;host=a;dc=x", "disk.used;dc=x;host=a"},
		{"disk.used;dc=x;host=a", "disk.used;dc=x;host=a"},
		{"m;z=1;a=2;m=3", "m;a=2;m=3;z=1"},
		{"m;", "m;"},
	} {
		if got := NormalizeTagged(c.in); got != c.want {
			t.Errorf("NormalizeTagged(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestStart sends points to carbon over plaintext and reads them back from
// graphite-web: the values, the archive graphite-web picks, a find, a
// tagged series, and carbon's and graphite-web's files all under the test's
// directory.
func TestStart(t *testing.T) {
	start := time.Now()
	g := Start(t, Options{
		Schemas: "[default]\npattern = .*\nretentions = 10s:1h,1m:1d\n",
		Aggregation: "[max]\npattern = \\.max$\nxFilesFactor = 0\naggregationMethod = max\n" +
			"[default]\npattern = .*\nxFilesFactor = 0.5\naggregationMethod = average\n",
	})
	t.Logf("%s started in %s", g.Versions, time.Since(start).Round(time.Millisecond))

	// Six points at 10 s in one aligned minute, 20 minutes ago, and one
	// point at 1 min three hours ago (past the 10 s archive: whisper writes
	// it to the 1 min one).
	m0 := time.Now().Unix()/60*60 - 20*60
	old := m0 - 3*3600
	var lines strings.Builder
	for i := range int64(6) {
		fmt.Fprintf(&lines, "test.a.avg %d %d\n", i+1, m0+10*i)
		fmt.Fprintf(&lines, "test.a.max %d %d\n", i+1, m0+10*i)
	}
	fmt.Fprintf(&lines, "test.old 42 %d\n", old)
	fmt.Fprintf(&lines, "disk.used;host=a;dc=x 7 %d\n", m0)
	if err := g.Send([]byte(lines.String())); err != nil {
		t.Fatal(err)
	}
	metrics := []string{"test.a.avg", "test.a.max", "test.old", "disk.used;host=a;dc=x"}
	if err := g.WaitPoints("test.a.*", m0-60, m0+60, 12, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := g.Flush(metrics, 30*time.Second); err != nil {
		t.Fatal(err)
	}

	render := func(target string, from, until int64) map[string][]*float64 {
		t.Helper()
		var series []struct {
			Target     string        `json:"target"`
			Datapoints [][2]*float64 `json:"datapoints"`
		}
		q := url.Values{"target": {target}, "from": {fmt.Sprint(from)}, "until": {fmt.Sprint(until)}, "format": {"json"}}
		if err := g.GetJSON("/render?"+q.Encode(), &series); err != nil {
			t.Fatal(err)
		}
		out := map[string][]*float64{}
		for _, s := range series {
			for _, p := range s.Datapoints {
				out[s.Target] = append(out[s.Target], p[0])
			}
		}
		return out
	}
	str := func(vs []*float64) string {
		var b []string
		for _, v := range vs {
			if v == nil {
				b = append(b, "null")
			} else {
				b = append(b, fmt.Sprint(*v))
			}
		}
		return strings.Join(b, " ")
	}
	// (m0-10, m0+50] at 10 s: the six points.
	if got := str(render("test.a.avg", m0-10, m0+50)["test.a.avg"]); got != "1 2 3 4 5 6" {
		t.Errorf("10 s archive: test.a.avg = %s, want 1 2 3 4 5 6", got)
	}
	// From 2 h ago graphite-web reads the 1 min archive: the minute's
	// average and maximum.
	from := m0 - 7200
	avg := render("test.a.avg", from, m0+60)["test.a.avg"]
	if len(avg) != 121 || avg[119] == nil || *avg[119] != 3.5 {
		t.Errorf("1 min archive: test.a.avg = %d points ending %s, want 121 ending 3.5 null", len(avg), str(avg[max(0, len(avg)-2):]))
	}
	mx := render("test.a.max", from, m0+60)["test.a.max"]
	if len(mx) != 121 || mx[119] == nil || *mx[119] != 6 {
		t.Errorf("1 min archive: test.a.max = %d points ending %s, want 121 ending 6 null", len(mx), str(mx[max(0, len(mx)-2):]))
	}
	if got := str(render("test.old", old-60, old)["test.old"]); got != "42" {
		t.Errorf("test.old = %s, want 42", got)
	}
	if got := str(render("seriesByTag('name=disk.used','dc=x')", m0-10, m0)["disk.used;dc=x;host=a"]); got != "7" {
		t.Errorf("seriesByTag = %s, want 7", got)
	}
	var nodes []struct {
		ID   string `json:"id"`
		Leaf int    `json:"leaf"`
	}
	if err := g.GetJSON("/metrics/find?query=test.a.*&format=treejson", &nodes); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(nodes); got != "[{test.a.avg 1} {test.a.max 1}]" {
		t.Errorf("find test.a.* = %s", got)
	}
	for _, f := range []string{"storage/whisper/test/a/avg.wsp", "storage/whisper/test/old.wsp", "web/graphite.db"} {
		if _, err := os.Stat(filepath.Join(g.Dir, f)); err != nil {
			t.Error(err)
		}
	}
	if err := g.Stop(); err != nil {
		t.Error(err)
	}
	// Logs has both consoles; carbon-cache's (--nodaemon) names the
	// listeners it opened.
	logs := g.Logs()
	for _, want := range []string{"--- carbon-cache (", "--- graphite-web (", "starting on " + g.PlaintextAddr[len("127.0.0.1:"):]} {
		if !strings.Contains(logs, want) {
			t.Errorf("Logs() lacks %q:\n%s", want, logs)
		}
	}
}
