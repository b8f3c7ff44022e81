package browsertest

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/server"
	"github.com/aerie-db/aerie/internal/server/servertest"
	"github.com/aerie-db/aerie/internal/tsdb"
)

var screenshots = flag.String("ui.screenshots", "", "directory for the browser test's screenshots of each page (default: a temporary directory)")

// badQuery has a parse error at its 16th character, the "*".
const badQuery = "ui_test_temp + * 2"

// badLines is a query of two lines, the second with an error after a
// two-byte character: Prometheus counts columns in bytes, the editor in
// characters.
var badLines = [2]string{"ui_test_temp", `+ ui_test_temp{city="é"} * * 2`}

// chromiumPath is Debian's chromium (scripts/install-deps.sh installs it).
const chromiumPath = "/usr/bin/chromium"

// The data the browser sees: two series of ui_test_temp, one sample a
// minute for the hour before end, with values that tell the minute.
func pariValue(t int64) float64 { return float64(t / 60 % 1000) }
func osloValue(t int64) float64 { return pariValue(t) / 2 }

// humidity is a second field of oslo's lines: ui_test_humidity{city="oslo"}
// is written in the same rows as ui_test_temp{city="oslo"}, so the two
// share a Heracles group.
func humidity(t int64) float64 { return float64(t / 60 % 100) }

// oldData writes the day before end's hour of the same series into dir's
// engine and flushes it into blocks, so the server starts with blocks on
// disk (the status page's blocks, explore's blocks of a series).
func oldData(t *testing.T, dir string, end int64) {
	t.Helper()
	db, err := tsdb.Open(dir, &tsdb.Options{FlushCheckInterval: -1})
	require.NoError(t, err)
	app := db.Appender(context.Background())
	for ts := end - 86400 - 3600; ts <= end-86400; ts += 60 {
		for _, s := range []struct {
			l labels.Labels
			v float64
		}{
			{labels.FromStrings("__name__", "ui_test_temp", "city", "paris"), pariValue(ts)},
			{labels.FromStrings("__name__", "ui_test_temp", "city", "oslo"), osloValue(ts)},
			{labels.FromStrings("__name__", "ui_test_humidity", "city", "oslo"), humidity(ts)},
		} {
			_, err := app.Append(0, s.l, ts*1000, s.v)
			require.NoError(t, err)
		}
	}
	require.NoError(t, app.Commit())
	require.NoError(t, db.FlushHead())
	require.NotEmpty(t, db.Blocks())
	require.NoError(t, db.Close())
}

func startServer(t *testing.T, end int64) string {
	t.Helper()
	dir := t.TempDir()
	oldData(t, dir, end)
	// Carbon's plaintext TCP listener on a free port; the other Graphite
	// and statsd listeners off.
	carbonAddr := servertest.FreeAddr(t)
	cfg := filepath.Join(t.TempDir(), "aerie.yml")
	require.NoError(t, os.WriteFile(cfg, []byte(`
aerie:
  graphite: {plaintext_tcp: "`+carbonAddr+`", plaintext_udp: "", pickle_tcp: ""}
  statsd: {udp: "", tcp: ""}
`), 0o644))
	s, err := server.New(server.Options{DataDir: dir, HTTPAddr: "127.0.0.1:0", ConfigFile: cfg, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	base := servertest.Start(t, s).URL
	var lines strings.Builder
	for ts := end - 3600; ts <= end; ts += 60 {
		fmt.Fprintf(&lines, "ui_test,city=paris temp=%g %d\n", pariValue(ts), ts)
		fmt.Fprintf(&lines, "ui_test,city=oslo temp=%g,humidity=%g %d\n", osloValue(ts), humidity(ts), ts)
		fmt.Fprintf(&lines, "ui_test,city=oslo,code=200 requests_total=%d %d\n", ts-end+3600, ts)
	}
	r, err := http.Post(base+"/write?precision=s", "text/plain", strings.NewReader(lines.String()))
	require.NoError(t, err)
	r.Body.Close()
	require.Equal(t, http.StatusNoContent, r.StatusCode)

	// Graphite's plaintext protocol: two paths, one point a minute for the
	// hour before end, web's value the minute, db's twice that.
	conn, err := net.Dial("tcp", carbonAddr)
	require.NoError(t, err)
	var plain strings.Builder
	for ts := end - 3600; ts <= end; ts += 60 {
		fmt.Fprintf(&plain, "ui.test.web.latency %d %d\nui.test.db.latency %d %d\n", ts/60%1000, ts, 2*(ts/60%1000), ts)
	}
	_, err = conn.Write([]byte(plain.String()))
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	require.Eventually(t, func() bool {
		r, err := http.Get(base + "/render?format=json&from=-2h&target=" + url.QueryEscape("ui.test.*.latency"))
		if err != nil {
			return false
		}
		defer r.Body.Close()
		var out []struct{ Datapoints [][2]*float64 }
		if json.NewDecoder(r.Body).Decode(&out) != nil || len(out) != 2 {
			return false
		}
		last := out[1].Datapoints[len(out[1].Datapoints)-1]
		return last[0] != nil
	}, 10*time.Second, 50*time.Millisecond, "carbon's lines stored")

	// A sensor's history, uploaded as Peregreen's users do.
	var csv strings.Builder
	from, to := sensorRange(end)
	for ts := from; ts < to; ts += 60 {
		fmt.Fprintf(&csv, "%d,%g\n", ts*1000, sensorValue(from, ts))
	}
	r, err = http.Post(base+"/upload/ui_sensor/csv/0-1-,/float64", "text/csv", strings.NewReader(csv.String()))
	require.NoError(t, err)
	r.Body.Close()
	require.Equal(t, http.StatusOK, r.StatusCode)
	return base
}

// sensorRange is the sensor's three days (s), whole hours ending three
// hours before end.
func sensorRange(end int64) (from, to int64) {
	to = end/3600*3600 - 3*3600
	return to - 72*3600, to
}

// hotHours are the hours after the sensor's start in which its value is
// 100 (elsewhere from 10 to 14): the intervals `max gte 90` finds.
var hotHours = []int64{10, 40}

func sensorValue(from, ts int64) float64 {
	for _, hh := range hotHours {
		if (ts-from)/3600 == hh {
			return 100
		}
	}
	return float64(10 + ts/60%5)
}

// pressEnter sends Enter as a keyboard does: keyDown (with its text) and
// keyUp. chromedp.KeyEvent adds a separate "char" event, which types a
// newline even when the page handled the keyDown. modifiers: 8 is Shift.
func pressEnter(modifiers int64) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeKeyDown, input.DispatchKeyEventTypeKeyUp} {
			p := input.DispatchKeyEventParams{Type: typ, Modifiers: modifiers, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13}
			if typ == input.DispatchKeyEventTypeKeyDown {
				p.Text, p.UnmodifiedText = "\r", "\r"
			}
			if _, err := cdp.Call(ctx, tg, input.DispatchKeyEvent, p); err != nil {
				return err
			}
		}
		return nil
	})
}

// TestUIBrowser drives the UI in Debian's headless Chromium against a real
// server holding known data: the query page (completion of a metric name,
// a label name and a label value; a range query drawn as two series; the
// hovered values; a legend toggle; drag-to-zoom into the URL; a reload;
// the table; parse errors at their position), the explore page and the
// status page, with no console error on any of them.
func TestUIBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("short: drives Chromium; scripts/test.sh runs it in its own step")
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("no %s (install Debian's chromium: scripts/install-deps.sh), or run with -short: %v", chromiumPath, err)
	}
	shots := *screenshots
	if shots == "" {
		shots = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(shots, 0o755))

	end := time.Now().Unix() / 60 * 60
	base := startServer(t, end)

	actx, cancelA := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(900, 700),
	)
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 90*time.Second)
	defer cancelT()

	require.NoError(t, chromedp.Do(ctx, chromedp.EmulateViewport(900, 700)))
	var mu sync.Mutex
	var console []string
	go func() {
		for m, err := range chromedp.Console(ctx) {
			if err != nil {
				return
			}
			// The bad queries' 400s are the failed requests the test makes
			// on purpose; the browser logs them.
			expected := m.Source == "network" && strings.Contains(m.Text, "status of 400") && strings.Contains(m.URL, "/api/v1/query?")
			if (m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning || m.IsException()) && !expected {
				mu.Lock()
				console = append(console, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line))
				mu.Unlock()
			}
		}
	}()
	do := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		t0 := time.Now()
		require.NoError(t, chromedp.Do(ctx, steps...), what)
		t.Logf("%s: %v", what, time.Since(t0).Round(time.Millisecond))
	}
	eval := func(js string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		require.NoError(t, err, js)
		return s
	}
	shot := func(name string) {
		t.Helper()
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(shots, name+".png"), png, 0o644))
		t.Logf("screenshot %s.png: %d bytes", name, len(png))
	}
	location := func() url.Values {
		t.Helper()
		loc, err := chromedp.Run(ctx, chromedp.Location())
		require.NoError(t, err)
		u, err := url.Parse(loc)
		require.NoError(t, err)
		return u.Query()
	}
	// waitFor polls a JavaScript condition.
	waitFor := func(what, js string) {
		t.Helper()
		_, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(15*time.Second)))
		if err != nil {
			state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + '\neditor: ' + (document.querySelector('.cm-content')?.textContent ?? '-') + '\nmain: ' + document.querySelector('main').innerText.slice(0, 1500)`))
			t.Fatalf("%s: %v; page:\n%s", what, err, state)
		}
	}

	// Query page: autocompletion of a metric name from the API.
	endISO := time.Unix(end, 0).UTC().Format(time.RFC3339)
	do("open the query page", chromedp.Navigate(base+"/query?range=30m&end="+url.QueryEscape(endISO)))
	do("wait for the editor", chromedp.WaitVisible(chromedp.CSS(".cm-content")))
	do("click", chromedp.Click(chromedp.CSS(".cm-content")))
	do("type a prefix", chromedp.SendKeys(chromedp.CSS(".cm-content"), "ui_test_te"))
	waitFor("the completion list offers ui_test_temp",
		`!!document.querySelector('.cm-tooltip-autocomplete') && [...document.querySelectorAll('.cm-tooltip-autocomplete li')].some(li => li.textContent.startsWith('ui_test_temp'))`)
	// CodeMirror ignores Enter for 75 ms after the list opens (its
	// interactionDelay), and the list may reopen when the API answers.
	time.Sleep(300 * time.Millisecond)
	// The list is ordered by the library; move to ui_test_temp.
	idx, err := strconv.Atoi(eval(`String([...document.querySelectorAll('.cm-tooltip-autocomplete li')].findIndex(l => l.textContent.startsWith('ui_test_temp')))`))
	require.NoError(t, err)
	for range idx {
		do("next completion", chromedp.KeyEvent(kb.ArrowDown))
	}
	do("Enter takes the completion", pressEnter(0))
	waitFor("the editor holds the completed name", `document.querySelector('.cm-content').textContent === 'ui_test_temp'`)
	do("Enter runs the query", pressEnter(0))
	waitFor("the chart", `!!document.querySelector('.chart[data-series] canvas')`)
	require.Equal(t, "2", eval(`document.querySelector('.chart').dataset.series`), "drawn series")
	require.Equal(t, "2", eval(`String(document.querySelectorAll('.u-legend .u-series').length - 1)`), "legend rows besides the time")
	q := location()
	require.Equal(t, "ui_test_temp", q.Get("expr"))
	require.Equal(t, "graph", q.Get("tab"))
	require.Equal(t, "30m", q.Get("range"))
	require.Equal(t, endISO, q.Get("end"))
	require.Contains(t, eval(`document.querySelector('.stats').textContent`), "samples read")

	// Hover the middle of the plot: the legend shows the values there.
	rect := eval(`(() => { const r = document.querySelector('.u-over').getBoundingClientRect(); return [r.left, r.top, r.width, r.height].join(',') })()`)
	var left, top, width, height float64
	_, err = fmt.Sscanf(rect, "%g,%g,%g,%g", &left, &top, &width, &height)
	require.NoError(t, err, rect)
	do("hover", chromedp.MouseEvent(chromedp.MouseMoved, left+width/2, top+height/2))
	waitFor("legend values", `document.querySelector('.u-legend .u-series .u-value').textContent.includes('T')`)
	hovered := eval(`document.querySelector('.u-legend .u-series .u-value').textContent`)
	ht, err := time.Parse(time.RFC3339Nano, hovered)
	require.NoError(t, err, hovered)
	require.InDelta(t, float64(end-900), float64(ht.Unix()), 60, "the middle of the last 30 m")
	legend := eval(`[...document.querySelectorAll('.u-legend .u-series')].slice(1).map(r => r.querySelector('.u-label').textContent + '=' + r.querySelector('.u-value').textContent).join('\n')`)
	sample := ht.Unix() / 60 * 60 // the last sample at or before the step
	require.Contains(t, legend, `ui_test_temp{city="paris"}=`+strconv.FormatFloat(pariValue(sample), 'f', -1, 64), legend)
	require.Contains(t, legend, `ui_test_temp{city="oslo"}=`+strconv.FormatFloat(osloValue(sample), 'f', -1, 64), legend)
	shot("query")

	// Clicking a legend entry hides its series. The inline legend reflows
	// when the cursor leaves the plot (its values become dashes): leave
	// first, then find the entry.
	do("leave the plot", chromedp.MouseEvent(chromedp.MouseMoved, 5, 5))
	var lx, ly float64
	_, err = fmt.Sscanf(eval(`(() => { const r = document.querySelector('.u-legend .u-series:nth-child(2) .u-label').getBoundingClientRect(); return (r.left + r.width/2) + ',' + (r.top + r.height/2) })()`), "%g,%g", &lx, &ly)
	require.NoError(t, err)
	do("toggle oslo", chromedp.MouseEvent(chromedp.MouseMoved, lx, ly), chromedp.MouseClickXY(lx, ly))
	waitFor("oslo hidden", `document.querySelector('.u-legend .u-series:nth-child(2)').classList.contains('u-off')`)

	// Drag across the middle half: the range becomes that half.
	x0, x1, y := left+width/4, left+3*width/4, top+height/2
	press := func(p *input.DispatchMouseEventParams) {
		p.Button = input.MouseButtonLeft
		p.Buttons = 1
		p.ClickCount = 1
	}
	do("drag to zoom",
		chromedp.MouseEvent(chromedp.MouseMoved, x0, y),
		chromedp.MouseEvent(chromedp.MousePressed, x0, y, press),
		chromedp.MouseEvent(chromedp.MouseMoved, (x0+x1)/2, y, press),
		chromedp.MouseEvent(chromedp.MouseMoved, x1, y, press),
		chromedp.MouseEvent(chromedp.MouseReleased, x1, y, press))
	waitFor("the zoomed range in the URL", `new URLSearchParams(location.search).get('range') !== '30m'`)
	waitFor("the zoomed chart", `!!document.querySelector('.chart[data-series] canvas') && document.querySelector('.chart').dataset.end !== '`+strconv.FormatInt(end, 10)+`'`)
	q = location()
	zr, err := model.ParseDuration(q.Get("range"))
	require.NoError(t, err, q.Get("range"))
	require.InDelta(t, 900, time.Duration(zr).Seconds(), 900*0.05, "range %s", q.Get("range"))
	ze, err := time.Parse(time.RFC3339Nano, q.Get("end"))
	require.NoError(t, err, q.Get("end"))
	require.InDelta(t, float64(end-450), float64(ze.UnixMilli())/1000, 900*0.05, "end %s", q.Get("end"))

	// Reload: the view comes back from the URL.
	do("reload", chromedp.Reload())
	waitFor("the chart after a reload", `!!document.querySelector('.chart[data-series] canvas')`)
	require.Equal(t, q.Get("range"), location().Get("range"))
	require.Equal(t, "ui_test_temp", eval(`document.querySelector('.cm-content').textContent`))

	// The table: an instant query at end.
	do("table tab", chromedp.Click(chromedp.CSS(`button[data-tab=table]`)))
	waitFor("the table", `document.querySelectorAll('table.result tbody tr').length === 2`)
	require.Equal(t, "table", location().Get("tab"))

	// Label names and values complete too.
	do("select all for labels", chromedp.Click(chromedp.CSS(".cm-content")), chromedp.KeyEvent("a", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	do("type a label prefix", chromedp.SendKeys(chromedp.CSS(".cm-content"), "ui_test_temp{ci"))
	waitFor("the label name offered", `[...document.querySelectorAll('.cm-tooltip-autocomplete li')].some(li => li.textContent.startsWith('city'))`)
	do("type a value's start", chromedp.KeyEvent(kb.Escape), chromedp.SendKeys(chromedp.CSS(".cm-content"), `ty="pa`))
	waitFor("the label value offered", `[...document.querySelectorAll('.cm-tooltip-autocomplete li')].some(li => li.textContent.startsWith('paris'))`)
	do("close the list", chromedp.KeyEvent(kb.Escape))

	// A parse error, marked where the server says.
	do("select all", chromedp.Click(chromedp.CSS(".cm-content")), chromedp.KeyEvent("a", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	do("type a bad query", chromedp.SendKeys(chromedp.CSS(".cm-content"), badQuery), chromedp.KeyEvent(kb.Escape), chromedp.Click(chromedp.CSS("button.execute")))
	waitFor("the error", `!!document.querySelector('.query-error')`)
	msg := eval(`document.querySelector('.query-error').textContent`)
	require.Contains(t, msg, "1:16: parse error")
	require.Equal(t, "1", eval(`document.querySelector('.query-error').dataset.line`))
	require.Equal(t, "16", eval(`document.querySelector('.query-error').dataset.col`))
	require.Equal(t, "*", eval(`document.querySelector('.cm-server-error')?.textContent ?? ''`), "the mark is on the 16th character")
	shot("query-error")

	// An error on the second line, after a two-byte character.
	do("select all again", chromedp.Click(chromedp.CSS(".cm-content")), chromedp.KeyEvent("a", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
	do("type two lines", chromedp.SendKeys(chromedp.CSS(".cm-content"), badLines[0]), chromedp.KeyEvent(kb.Escape), pressEnter(8),
		chromedp.SendKeys(chromedp.CSS(".cm-content"), badLines[1]), chromedp.KeyEvent(kb.Escape), chromedp.Click(chromedp.CSS("button.execute")))
	waitFor("the second error", `document.querySelector('.query-error')?.dataset.line === '2'`)
	require.Equal(t, badLines[0]+"\n"+badLines[1], location().Get("expr"), "typed as two lines")
	wantCol := strings.LastIndex(badLines[1], "* 2") + 1 // in bytes, 1-based
	require.Equal(t, strconv.Itoa(wantCol), eval(`document.querySelector('.query-error').dataset.col`), eval(`document.querySelector('.query-error').textContent`))
	require.Equal(t, "*", eval(`document.querySelector('.cm-server-error')?.textContent ?? ''`))
	require.Equal(t, strconv.Itoa(len([]rune(badLines[1][:wantCol-1]))), eval(`(() => {
		const m = document.querySelector('.cm-server-error'), line = m.closest('.cm-line');
		const r = document.createRange(); r.setStart(line, 0); r.setEnd(m, 0);
		return String(r.toString().length) })()`), "the mark is on the second *")

	// Explore: metric names with series counts, a metric's series.
	do("open the explore page", chromedp.Navigate(base+"/explore"))
	waitFor("the metric list", `!!document.querySelector('ul.metrics a[data-metric="ui_test_temp"]')`)
	require.Equal(t, "2", eval(`document.querySelector('ul.metrics a[data-metric="ui_test_temp"]').parentElement.querySelector('.count').textContent`))
	do("pick a metric", chromedp.Click(chromedp.CSS(`ul.metrics a[data-metric="ui_test_temp"]`)))
	waitFor("its series", `document.querySelectorAll('table.series tbody tr').length === 2`)
	require.Equal(t, "ui_test_temp", location().Get("metric"))
	require.Contains(t, eval(`document.querySelector('.detail').textContent`), "city")
	paris, err := url.Parse(eval(`[...document.querySelectorAll('.label-values a')].find(a => a.textContent === 'paris')?.href ?? ''`))
	require.NoError(t, err)
	require.Equal(t, `ui_test_temp{city="paris"}`, paris.Query().Get("expr"), "a label value links to its selector")
	shot("explore")

	// A series' group (its siblings) and blocks, from the status API.
	do("oslo's group and blocks", chromedp.Click(chromedp.CSS(`table.series tbody tr:nth-child(`+eval(`String([...document.querySelectorAll('table.series tbody tr')].findIndex(r => r.textContent.includes('oslo')) + 1)`)+`) a.series-link`)))
	waitFor("the series' detail", `!!document.querySelector('.series-detail table.members')`)
	require.Equal(t, `ui_test_temp{city="oslo"}`, location().Get("series"))
	members := eval(`[...document.querySelectorAll('.series-detail .group:last-of-type table.members tbody tr td:first-child')].map(td => td.textContent).join('\n')`)
	require.Contains(t, members, `ui_test_humidity{city="oslo"}`, "the sibling written in the same lines")
	require.Contains(t, members, `ui_test_temp{city="oslo"}`)
	require.NotContains(t, members, "paris")
	// The day-old hour may straddle a partition boundary: one or two blocks.
	require.Positive(t, mustAtoi(t, eval(`String(document.querySelectorAll('.series-detail table.blocks tbody tr').length)`)), "the blocks flushed before the server started")
	shot("explore-series")
	do("open in the query page", chromedp.Click(chromedp.CSS(`.detail > h2 .open-query a`)))
	waitFor("the query page's chart", `!!document.querySelector('.chart[data-series="2"] canvas')`)

	// Sensors: a value search draws its intervals on the overview; a click
	// on one zooms the chart into it; the zoomed range downloads.
	sFrom, sTo := sensorRange(end)
	do("open the sensors page", chromedp.Navigate(base+"/sensors?"+url.Values{
		"start": {time.Unix(sFrom, 0).UTC().Format(time.RFC3339)}, "end": {time.Unix(sTo, 0).UTC().Format(time.RFC3339)}}.Encode()))
	do("type a search", chromedp.SetValue(chromedp.CSS("input.match"), "ui_sensor"), chromedp.SetValue(chromedp.CSS("input.cond"), "max gte 90 & min gt 50"),
		chromedp.Click(chromedp.CSS("button.search")))
	waitFor("the overview with its intervals", `!!document.querySelector('.overview-chart[data-intervals="2"] canvas')`)
	require.Equal(t, "2", eval(`String(document.querySelectorAll('table.found-intervals tbody tr').length)`))
	q = location()
	require.Equal(t, "ui_sensor", q.Get("match"))
	require.Equal(t, "max gte 90 & min gt 50", q.Get("cond"))
	hot := func(i int) (int64, int64) {
		return (sFrom + hotHours[i]*3600) * 1000, (sFrom+(hotHours[i]+1)*3600)*1000 - 1
	}
	// The band of the first interval is drawn: most of the overview's
	// pixels down the middle of the interval are the band's red (a grid
	// line or the series' line may cross some).
	h0, h1 := hot(0)
	frac := (float64(h0+h1)/2/1000 - float64(sFrom)) / float64(sTo-sFrom)
	red := eval(fmt.Sprintf(`(() => {
		const c = document.querySelector('.overview-chart canvas'), o = document.querySelector('.overview-chart .u-over');
		const cr = c.getBoundingClientRect(), or = o.getBoundingClientRect(), k = c.width / cr.width;
		const x = Math.round((or.left - cr.left + %g * or.width) * k);
		const y0 = Math.round((or.top - cr.top) * k), hgt = Math.round(or.height * k);
		const px = c.getContext('2d').getImageData(x, y0, 1, hgt).data; // one readback: more warn
		let n = 0;
		for (let i = 0; i < 20; i++) {
			const j = 4 * Math.round((0.05 + 0.9 * i / 19) * (hgt - 1));
			if (px[j + 3] > 0 && px[j] > px[j + 1] + 10 && px[j] > px[j + 2] + 10) n++;
		}
		return String(n) })()`, frac))
	require.GreaterOrEqual(t, mustAtoi(t, red), 15, "red pixels of 20 down the first interval's band")
	shot("sensors")
	// Click the band: the chart zooms into the interval.
	rect = eval(`(() => { const r = document.querySelector('.overview-chart .u-over').getBoundingClientRect(); return [r.left, r.top, r.width, r.height].join(',') })()`)
	_, err = fmt.Sscanf(rect, "%g,%g,%g,%g", &left, &top, &width, &height)
	require.NoError(t, err, rect)
	do("click the first band", chromedp.MouseClickXY(left+frac*width, top+height/2))
	waitFor("the zoomed chart", fmt.Sprintf(`!!document.querySelector('.main-chart[data-from="%d"][data-to="%d"] canvas')`, h0, h1))
	q = location()
	require.Equal(t, strconv.FormatInt(h0, 10), q.Get("from"))
	require.Equal(t, strconv.FormatInt(h1, 10), q.Get("to"))
	// The zoomed hour downloads as CSV: its 60 points, each 100.
	href := eval(`document.querySelector('a.download[data-format=csv]').getAttribute('href')`)
	resp, err := http.Get(base + href)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	csvLines := strings.Split(strings.TrimSpace(string(body)), "\n")
	require.Len(t, csvLines, 60, "%s", body)
	// Each line names its series first: the native endpoint answers many.
	require.Equal(t, fmt.Sprintf(`"{__name__=""ui_sensor""}",%d,100`, h0), csvLines[0])
	for _, f := range []string{"json", "msgp"} {
		require.Contains(t, eval(`document.querySelector('a.download[data-format=`+f+`]').getAttribute('href')`), "format="+f)
	}
	// The second interval from the list.
	do("zoom into the second", chromedp.Click(chromedp.CSS(`table.found-intervals tbody tr:nth-child(2) button.zoom`)))
	h0, h1 = hot(1)
	waitFor("the second zoom", fmt.Sprintf(`!!document.querySelector('.main-chart[data-from="%d"][data-to="%d"] canvas')`, h0, h1))
	shot("sensors-zoomed")

	// Graphite: complete a function and a path, render into the chart.
	do("open the graphite page", chromedp.Navigate(base+"/graphite?from=-2h"))
	do("type a function's start", chromedp.Click(chromedp.CSS("textarea.targets")), chromedp.SendKeys(chromedp.CSS("textarea.targets"), "sumSe"))
	waitFor("the function offered", `document.querySelector('ul.suggest:not([hidden]) li')?.textContent.startsWith('sumSeries(')`)
	// One more key and Tab at once, before the list for "sumSer" is
	// back: Tab takes the shown item over the word as it is now.
	do("type on and Tab", chromedp.SendKeys(chromedp.CSS("textarea.targets"), "r"), chromedp.KeyEvent(kb.Tab))
	waitFor("the function typed", `document.querySelector('textarea.targets').value === 'sumSeries('`)
	do("type a path's start", chromedp.SendKeys(chromedp.CSS("textarea.targets"), "ui.te"))
	waitFor("the path offered", `document.querySelector('ul.suggest:not([hidden]) li')?.textContent.startsWith('ui.test.')`)
	do("Tab takes the path", chromedp.KeyEvent(kb.Tab))
	waitFor("the path typed", `document.querySelector('textarea.targets').value === 'sumSeries(ui.test.'`)
	do("finish the target and render", chromedp.SendKeys(chromedp.CSS("textarea.targets"), "*.latency)"), chromedp.KeyEvent(kb.Escape),
		chromedp.Click(chromedp.CSS("button.render")))
	waitFor("the rendered chart", `!!document.querySelector('.graphite .chart[data-series="1"] canvas')`)
	require.Equal(t, "sumSeries(ui.test.*.latency)", location().Get("target"))
	require.Equal(t, "sumSeries(ui.test.*.latency)", eval(`document.querySelector('.graphite .u-legend .u-series:nth-child(2) .u-label').textContent`))
	// The value under the cursor in the middle of the plot: web + db at
	// the time the legend shows.
	rect = eval(`(() => { const r = document.querySelector('.graphite .u-over').getBoundingClientRect(); return [r.left, r.top, r.width, r.height].join(',') })()`)
	_, err = fmt.Sscanf(rect, "%g,%g,%g,%g", &left, &top, &width, &height)
	require.NoError(t, err, rect)
	do("hover the middle", chromedp.MouseEvent(chromedp.MouseMoved, left+width*0.75, top+height/2))
	waitFor("the hovered value", `document.querySelector('.graphite .u-legend .u-series:nth-child(2) .u-value').textContent !== '—'`)
	gt, err := time.Parse(time.RFC3339Nano, eval(`document.querySelector('.graphite .u-legend .u-series .u-value').textContent`))
	require.NoError(t, err)
	require.Equal(t, strconv.FormatInt(3*(gt.Unix()/60%1000), 10), eval(`document.querySelector('.graphite .u-legend .u-series:nth-child(2) .u-value').textContent`), "at %v", gt)
	shot("graphite")

	// Cache: the same range query twice, over a range older than the
	// results cache's max_freshness (10 m): the second is a hit.
	for range 2 {
		r, err := http.Get(base + "/api/v1/query_range?" + url.Values{"query": {"ui_test_temp"},
			"start": {strconv.FormatInt(end-3600, 10)}, "end": {strconv.FormatInt(end-1800, 10)}, "step": {"60"}}.Encode())
		require.NoError(t, err)
		r.Body.Close()
		require.Equal(t, http.StatusOK, r.StatusCode)
	}
	do("open the cache page", chromedp.Navigate(base+"/cache"))
	waitFor("the results cache", `!!document.querySelector('.card.cache[data-cache="results"] table.slabs')`)
	ratio := eval(`document.querySelector('.card.cache[data-cache="results"] .hit-ratio').textContent`)
	require.NotEqual(t, "—", ratio, "a hit ratio of some gets")
	hits := mustAtoi(t, eval(`document.querySelector('.card.cache[data-cache="results"] table.ratios tbody td:nth-child(2)').textContent`))
	require.Positive(t, hits, "the repeated query hit")
	require.Positive(t, mustAtoi(t, eval(`document.querySelector('.card.cache[data-cache="results"] table.slabs tbody td').textContent`)), "slabs")
	shot("cache")

	// Bucket: the tier runs (the filesystem bucket, by default); its
	// counters and blocks are answered.
	do("open the bucket page", chromedp.Navigate(base+"/bucket"))
	waitFor("the bucket page", `document.querySelector('.bucket')?.dataset.state === 'ok'`)
	require.Contains(t, eval(`document.querySelector('.bucket').textContent`), "Read amplification")
	require.GreaterOrEqual(t, mustAtoi(t, eval(`document.querySelector('.bucket .remote-blocks').textContent`)), 0)
	shot("bucket")

	// Status: every section answered by the API.
	do("open the status page", chromedp.Navigate(base+"/status"))
	waitFor("every section loaded", `document.querySelectorAll('.status-section').length > 0 && !document.querySelector('.status-section[data-state=loading]')`)
	failed := eval(`[...document.querySelectorAll('.status-section[data-state=error]')].map(s => s.id + ': ' + s.textContent).join('\n')`)
	require.Empty(t, failed, "status sections the API did not answer")
	require.Contains(t, eval(`document.querySelector('#buildinfo').textContent`), "goVersion")
	require.Contains(t, eval(`document.querySelector('#tsdb').textContent`), "numSeries")
	require.Contains(t, eval(`document.querySelector('#storage').textContent`), "aerie_head_series", "the engine's figures from /metrics")
	require.Contains(t, eval(`document.querySelector('#storage').textContent`), `{area="live"}`)
	require.Positive(t, mustAtoi(t, eval(`String(document.querySelectorAll('#engine table.blocks tbody tr').length)`)), "the blocks listed")
	require.Positive(t, mustAtoi(t, eval(`String(document.querySelectorAll('#engine table.partitions tbody tr').length)`)), "the head's partitions")
	require.Contains(t, eval(`document.querySelector('#engine table.levels').textContent`), "B/sample")
	require.Contains(t, eval(`document.querySelector('#engine table.groups').textContent`), `t:city=oslo`)
	shot("status")

	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, console, "console errors and warnings")
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err, s)
	return n
}
