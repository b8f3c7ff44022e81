package graphite

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/graphite/graphitetest"
)

// TestDifferential sends the same points to Debian's carbon-cache and
// graphite-web (one 60 s archive, average, xFilesFactor 0) and to this API
// over a memStore with the same grid, and compares the answers of the
// API's own requests: find in every format, expand, index.json, the tags
// API, and render in every format with maxDataPoints, noNullPoints and
// jsonp. Bodies are compared byte for byte where graphite-web's encoding
// is reproduced (render json, csv, raw), as decoded JSON elsewhere.
// Known differences, not asked here: a tagged series' path is its name
// here (find "*" lists "disk"), where graphite-web's whisper finder shows
// its file under "_tagged"; the tag index (graphite-web's holds only
// tagged series, so /tags/name lists only their paths); the
// treejson/completer separators (graphite-web's json.dumps spaces).
func TestDifferential(t *testing.T) {
	if testing.Short() {
		t.Skip("starts carbon and graphite-web")
	}
	g := graphitetest.Start(t, graphitetest.Options{
		Schemas:     "[default]\npattern = .*\nretentions = 60s:1d\n",
		Aggregation: "[default]\npattern = .*\nxFilesFactor = 0\naggregationMethod = average\n",
	})
	now := time.Now().Unix() / 60 * 60
	base := now - 3600
	st := &memStore{}
	var lines strings.Builder
	var metrics []string
	series := func(path string, val func(i int) float64) {
		tags, err := ParseTagged(path)
		if err != nil {
			t.Fatal(err)
		}
		var kv []string
		for k, v := range tags {
			if k == "name" {
				k = "__name__"
			}
			kv = append(kv, k, v)
		}
		vals := make([]float64, 50)
		for i := range vals {
			vals[i] = val(i)
			if !math.IsNaN(vals[i]) {
				fmt.Fprintf(&lines, "%s %s %d\n", path, AppendPyFloat(nil, vals[i]), base+60*int64(i))
			}
		}
		st.add(labels.FromStrings(kv...), base, 60, vals...)
		metrics = append(metrics, path)
	}
	gap := func(f func(i int) float64) func(i int) float64 {
		return func(i int) float64 {
			if i%7 == 3 {
				return math.NaN()
			}
			return f(i)
		}
	}
	series("servers.web1.cpu.user", gap(func(i int) float64 { return float64(i) * 1.5 }))
	series("servers.web1.cpu.system", func(i int) float64 { return float64(i*i) / 8 })
	series("servers.web2.cpu.user", gap(func(i int) float64 { return 100 + float64(i) }))
	series("servers.web1.mem", func(i int) float64 { return 1e17 + float64(i)*1e15 })
	series("a.b", func(i int) float64 { return 0.0001 * float64(i) })
	series("a.b.c", func(i int) float64 { return -float64(i) })
	series("disk.used;dc=east;host=h1", func(i int) float64 { return 10 + float64(i) })
	series("disk.used;dc=west;host=h2", gap(func(i int) float64 { return 20 + float64(i) }))
	if err := g.Send([]byte(lines.String())); err != nil {
		t.Fatal(err)
	}
	if err := g.Flush(metrics, 60*time.Second); err != nil {
		t.Fatal(err)
	}

	mux := http.NewServeMux()
	New(st, Options{}).Register(mux, nil)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ours := func(path string) (int, []byte) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	theirs := func(path string) []byte {
		b, err := g.Get(path)
		if err != nil {
			t.Errorf("graphite-web: %v", err)
		}
		return b
	}
	r := fmt.Sprintf("&from=%d&until=%d", base+600, base+2400)
	hm := func(t int64) string { return time.Unix(t, 0).UTC().Format("15:04_20060102") }
	rHM := "&from=" + hm(base+600) + "&until=" + hm(base+2400)
	for _, tc := range []struct {
		path string
		cmp  string // bytes, json or pickle
	}{
		{"/metrics/find?query={a,servers}", "json"},
		{"/metrics/find?query=servers.*", "json"},
		{"/metrics/find?query=servers.web1.*&wildcards=1", "json"},
		{"/metrics/find?query=servers.web?.cpu.*", "json"},
		{"/metrics/find?query=servers.{web1,web3}.cpu.[st]*", "json"},
		{"/metrics/find?query=a.*", "json"},
		{"/metrics/find?query=a.b*", "json"},
		{fmt.Sprintf("/metrics/find?query=servers.*&from=%d&until=%d", now+3600, now+7200), "json"},
		{"/metrics/find?query=servers.web1.&format=completer", "json"},
		{"/metrics/find?query=servers.w&format=completer&wildcards=1", "json"},
		{"/metrics/find?query=servers.*.cpu.*&format=nodelist&position=2", "json"},
		{"/metrics/find?query=nope.*", "json"},
		{"/metrics/expand?query=servers.*.cpu.*&query=a.*", "json"},
		{"/metrics/expand?query=servers.*&query=a.*&groupByExpr=1", "json"},
		{"/metrics/expand?query={a,servers}.*&leavesOnly=1", "json"},
		{"/tags/dc", "tagvalues"},
		{"/tags/findSeries?expr=dc=east", "json"},
		{"/tags/findSeries?expr=name=~disk&expr=host!=h1", "json"},
		{"/tags/findSeries?expr=host=~h", "json"},
		{"/tags/autoComplete/tags?expr=name=disk.used", "json"},
		{"/tags/autoComplete/values?tag=host&expr=dc=~e", "json"},
		{"/tags/autoComplete/values?tag=dc", "json"},
		{"/render?format=json&target=servers.web1.cpu.user" + r, "bytes"},
		{"/render?format=json&target=servers.*.cpu.*&target=a.b" + r, "bytes"},
		{"/render?format=json&target=servers.web1.mem&target=a.b.c" + r, "bytes"},
		{"/render?format=json&target=seriesByTag('dc=~e')" + r, "bytes"},
		{"/render?format=json&target=disk.used;dc=west;host=h2" + r, "bytes"},
		{"/render?format=json&target=servers.*.cpu.*&maxDataPoints=7" + r, "bytes"},
		{"/render?format=json&target=servers.web1.cpu.user&maxDataPoints=1" + r, "bytes"},
		{"/render?format=json&target=servers.web1.cpu.user&maxDataPoints=13" + r, "bytes"},
		{"/render?format=json&target=servers.web2.cpu.user&noNullPoints" + r, "bytes"},
		{"/render?format=json&target=servers.web2.cpu.user&jsonp=cb" + r, "bytes"},
		{"/render?format=json&target=nope" + r, "bytes"},
		{"/render?format=csv&target=servers.*.cpu.user&target=a.b" + r, "bytes"},
		{"/render?format=raw&target=servers.web1.*&target=servers.web1.cpu.*" + r, "bytes"},
		{"/render?format=pickle&target=servers.web2.cpu.user&target=servers.web1.mem" + r, "pickle"},
		{"/render?format=csv&target=servers.web2.cpu.user&tz=Europe/Paris" + r, "bytes"},
		{"/render?format=json&target=servers.web1.cpu.user" + rHM, "bytes"},
		{"/render?format=json&target=sumSeries(servers.*.cpu.*)" + r, "bytes"},
		{"/render?format=json&target=aliasByNode(servers.*.cpu.user,1)" + r, "bytes"},
		{"/render?format=json&target=consolidateBy(servers.web2.cpu.user,'max')&maxDataPoints=5" + r, "bytes"},
		{"/render?format=json&target=seriesByTag('name=disk.used')|scale(2)" + r, "bytes"},
		{"/render?format=json&target=keepLastValue(servers.web2.cpu.user)&xFilesFactor=0.9&maxDataPoints=4" + r, "bytes"},
	} {
		code, got := ours(tc.path)
		want := theirs(tc.path)
		if code != 200 {
			t.Errorf("%s: status %d: %s", tc.path, code, got)
			continue
		}
		switch tc.cmp {
		case "bytes":
			// tags objects are compared decoded: graphite-web writes a
			// Python dict in insertion order, this API sorts the keys
			g, w := string(got), string(want)
			if strings.Contains(tc.path, "format=json") {
				g, w = tagsObject.ReplaceAllString(g, "TAGS"), tagsObject.ReplaceAllString(w, "TAGS")
				if !sameTags(got, want) {
					t.Errorf("%s: tags differ:\n ours %.600s\ntheirs %.600s", tc.path, got, want)
				}
			}
			if g != w {
				t.Errorf("%s:\n ours %.600s\ntheirs %.600s", tc.path, got, want)
			}
		case "json", "tagvalues":
			var a, b any
			if err := json.Unmarshal(got, &a); err != nil {
				t.Errorf("%s: ours: %v", tc.path, err)
				continue
			}
			if err := json.Unmarshal(want, &b); err != nil {
				t.Errorf("%s: theirs: %v in %.200s", tc.path, err, want)
				continue
			}
			if tc.cmp == "tagvalues" {
				b = dropIDs(b)
			}
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s:\n ours %s\ntheirs %s", tc.path, got, want)
			}
		case "pickle":
			a, b := unpickleJSON(t, got), unpickleJSON(t, want)
			if a != b {
				t.Errorf("%s:\n ours %s\ntheirs %s", tc.path, a, b)
			}
		}
	}
}

var tagsObject = regexp.MustCompile(`"tags": \{[^}]*\}`)

// sameTags reports whether two render answers (JSON, maybe JSONP) have
// the same tags, series by series.
func sameTags(a, b []byte) bool {
	tags := func(x []byte) []map[string]string {
		s := string(x)
		if i := strings.IndexByte(s, '('); i >= 0 && strings.HasSuffix(s, ")") {
			s = s[i+1 : len(s)-1]
		}
		var ss []struct {
			Tags map[string]string `json:"tags"`
		}
		if json.Unmarshal([]byte(s), &ss) != nil {
			return nil
		}
		out := make([]map[string]string, len(ss))
		for i, x := range ss {
			out[i] = x.Tags
		}
		return out
	}
	return reflect.DeepEqual(tags(a), tags(b))
}

// dropIDs removes graphite-web's database ids from a tags answer.
func dropIDs(v any) any {
	switch v := v.(type) {
	case map[string]any:
		delete(v, "id")
		for k, x := range v {
			v[k] = dropIDs(x)
		}
	case []any:
		for i, x := range v {
			v[i] = dropIDs(x)
		}
	}
	return v
}

// unpickleJSON decodes a pickle with Python and returns it as sorted
// JSON.
func unpickleJSON(t *testing.T, b []byte) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	f := t.TempDir() + "/p.pickle"
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, "-c", `import json, pickle, sys
print(json.dumps(pickle.load(open(sys.argv[1], "rb")), sort_keys=True))`, f).CombinedOutput()
	if err != nil {
		t.Fatalf("unpickle: %v: %s", err, out)
	}
	return strings.TrimSpace(string(out))
}
