package bench

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aerie-db/aerie/bench/harness"
)

// TestHistory runs the history phases on two hosts at a 5 min interval and
// checks that every published measurement is there (the harness itself
// fails the run if an engine loses a sample or the engines disagree on a
// query) and that the report renders.
func TestHistory(t *testing.T) {
	historyScales["test"] = historyScale{Name: "test", Hosts: 1, Span: 2 * day, LongHosts: 1, LongCPUs: 1, LongSpan: 4 * day, QueryRuns: 1, QueryLoop: 50 * time.Millisecond}
	Scales["test"] = Scale{Name: "test"}
	defer delete(historyScales, "test")
	defer delete(Scales, "test")
	rep, err := Run(Config{Workload: historyWorkload, Scale: "test", Dir: t.TempDir(), Seed: 2, Interval: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	// One host × 2 days × 517 series and one × 4 days × 9, at 288 a day.
	if want := int64(288 * (2*517 + 4*9)); rep.Samples != want {
		t.Errorf("%d samples of history, want %d", rep.Samples, want)
	}
	for _, name := range []string{
		"backfill_throughput", "backfill_write_seconds", "backfill_flush_seconds", "backfill_cpu_seconds",
		"backfilled_blocks", "backfilled_bytes_per_sample", "backfilled_index_bytes_per_sample",
		"compacted_blocks", "compacted_bytes_per_sample", "compacted_index_bytes_per_sample", "compaction_seconds",
		"range_7d_rate_backfilled", "range_30d_avg_backfilled", "range_7d_rate_compacted", "range_30d_rate_compacted_p99",
		"compaction_query_p50", "compaction_query_p9999", "idle_query_p9999",
		"backfill_throughput_shuffled", "backfill_throughput_imports", "backfill_blocks",
	} {
		res, ok := rep.Result(name)
		if !ok {
			t.Fatalf("no %s", name)
		}
		if res.Aerie <= 0 || res.Prometheus <= 0 || res.Ratio <= 0 {
			t.Errorf("%s = %+v", name, res)
		}
	}
	for _, name := range []string{"backfill_peak_rss", "backfill_peak_heap"} {
		if res, ok := rep.Result(name); !ok || res.Aerie < 0 || res.Prometheus < 0 {
			t.Errorf("%s = %+v, %v", name, res, ok)
		}
	}
	// Compaction never leaves more blocks than it found; Prometheus'
	// 2 h out-of-order blocks always merge.
	b, _ := rep.Result("backfilled_blocks")
	c, _ := rep.Result("compacted_blocks")
	if c.Aerie > b.Aerie || c.Prometheus >= b.Prometheus {
		t.Errorf("%+v blocks before compaction, %+v after", b, c)
	}
	var buf bytes.Buffer
	if err := rep.WriteTable(&buf); err != nil || strings.Contains(buf.String(), "tuple") {
		t.Fatalf("table: %v\n%s", err, buf.String())
	}
	var md bytes.Buffer
	if err := WriteDocument(&md, []harness.Report{rep}, "make benchmarks", ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## History: backfill and compaction (test scale)", "`backfill_throughput` | ≥ 3×", "`compacted_bytes_per_sample` | ≤ 0.35×", "`range_7d_rate_compacted` | ≤ 0.5×"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
	if strings.Contains(md.String(), "`range_7d_rate_backfilled` | ≤") {
		t.Error("a goal on the queries before compaction")
	}
}

func TestHistoryOrders(t *testing.T) {
	d, err := newHistoryData(historyScale{Name: "t", Hosts: 2, Span: 2 * day, LongHosts: 1, LongCPUs: 2, LongSpan: 5 * day}, time.Minute, 1)
	if err != nil {
		t.Fatal(err)
	}
	by := d.byHost()
	if len(by) != 2*2+5 || by[0] != (histUnit{0, 3}) || by[1] != (histUnit{0, 4}) || by[4] != (histUnit{2, 0}) {
		t.Fatalf("byHost = %v", by)
	}
	sh := d.shuffledDays(rand.New(rand.NewPCG(1, 2)))
	if len(sh) != len(by) {
		t.Fatalf("shuffled %d units of %d", len(sh), len(by))
	}
	imp := d.perHost()
	if len(imp) != 3 || len(imp[0]) != 2 || len(imp[2]) != 5 || imp[1][0] != (histUnit{1, 3}) {
		t.Fatalf("perHost = %v", imp)
	}
	if got := len(d.hosts[2].series); got != 2*8+1 {
		t.Errorf("long host has %d series, want 17", got)
	}
	if d.samples != 1440*(2*2*517+5*17) {
		t.Errorf("%d samples", d.samples)
	}
}
