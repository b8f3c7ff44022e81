package httpbench

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aerie-db/aerie/bench/harness"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// sampleReport is a report with every kind of row: a missing load, an
// error answer, a name-only difference.
func sampleReport() *Report {
	return &Report{
		Header: harness.Header{Kind: Kind, Machine: &harness.Machine{CPU: "Test CPU", Cores: 2, GOMAXPROCS: 2, MemoryGiB: 8, OS: "linux/amd64", Go: "go1.26"},
			Commit: "0123456789ab", Date: "2026-11-24T00:00:00Z", Scale: "small", Seconds: 150},
		Workload: "tsbs",
		Series:   500,
		Samples:  2_160_000,
		Config: map[string]string{"targets": "50", "interval": "10s", "span": "12h0m0s", "clients": "2,8",
			"lp_batch": "10000", "timestamps": timestamps("tsbs"), "rw_batch": "2000", "instances": "1", "repeats": "3", "loadavg_start": "1.00 0.50 0.25", "loadavg_end": "2.00 1.00 0.50"},
		Peers: []Peer{{Name: aerie, Version: "0123456789ab"}, {Name: aerieNoCache, Version: "0123456789ab"}, {Name: vm, Version: "victoria-metrics-test"}, {Name: vmNoCache, Version: "victoria-metrics-test"}},
		Ingest: []IngestResult{
			{Peer: aerie, Protocol: lineProtocol, Clients: 2, SamplesPerSecond: 500_000, CPUSecondsPerMillion: 2, PeakRSSBytes: 64 << 20},
			{Peer: vm, Protocol: lineProtocol, Clients: 2, SamplesPerSecond: 1_000_000, CPUSecondsPerMillion: 0.8, PeakRSSBytes: 128 << 20},
			{Peer: vm, Protocol: remoteWrite, Clients: 8, SamplesPerSecond: 800_000, CPUSecondsPerMillion: 1, PeakRSSBytes: 150 << 20},
		},
		Disk: []DiskResult{
			{Peer: vm, Samples: 2_160_000, Bytes: 3_888_000, BytesPerSample: 1.8},
			{Peer: aerie, Samples: 2_160_000, Bytes: 16_200_000, BytesPerSample: 7.5, WALBytes: 13_000_000, BlockBytes: 2_880_000, BlockSamples: 1_920_000, BlockBytesPerSample: 1.5, Seconds: 51},
		},
		Queries: []QueryResult{
			{Pattern: "5-1-1", Comment: "max of 5 metrics of 1 host", Example: `max(max_over_time({__name__=~"cpu_(usage_user|usage_system)",hostname="host_1"}[5m])) by (__name__)`, Agreement: agree,
				Peers: []QueryPeer{{Peer: aerieNoCache, Runs: 3, MedianMs: 2, P99Ms: 4}, {Peer: aerie, Runs: 3, MedianMs: 0.4, P99Ms: 0.8}, {Peer: vmNoCache, Runs: 3, MedianMs: 1, P99Ms: 2}, {Peer: vm, Runs: 3, MedianMs: 0.5, P99Ms: 1}}},
			{Pattern: "double-groupby-1", Comment: "mean per host per hour", Example: "avg(avg_over_time(cpu_usage_user[1h])) by (__name__, hostname)", Agreement: "aerie: " + agreeName + " | x",
				Peers: []QueryPeer{{Peer: aerieNoCache, Error: "execution: vector cannot contain metrics with the same labelset"}, {Peer: aerie, Error: "execution: vector cannot contain metrics with the same labelset"}, {Peer: vmNoCache, Runs: 3, MedianMs: 10, P99Ms: 20}, {Peer: vm, Runs: 3, MedianMs: 2, P99Ms: 3}}},
		},
		Cardinality: []CardinalityResult{
			{Peer: aerie, Series: 20_000, Clients: 8, Seconds: 0.4, SeriesPerSecond: 50_000, RSSBytesPerSeries: 900, HeapBytesPerSeries: 600},
			{Peer: vm, Series: 20_000, Clients: 8, Seconds: 0.8, SeriesPerSecond: 25_000, RSSBytesPerSeries: 2000, HeapBytesPerSeries: 1500},
		},
	}
}

func TestWriteMarkdownGolden(t *testing.T) {
	var b bytes.Buffer
	if err := sampleReport().WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report.golden.md")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Fatalf("markdown differs from %s (go test -run TestWriteMarkdownGolden -update):\n%s", golden, b.String())
	}
	md := b.String()
	for _, s := range []string{
		"| influx | 2 | 500000 | 1000000 | 0.500 | 2.000 | 0.8000 | 2.500 | 64.000 | 128.0 | 0.500 |", // every number with its ratio
		"| remote-write | 8 | 0 | 800000 | — |",                                                       // a missing load has no ratio
		"| data directory, B/sample | 7.500 | 1.800 | 4.167 |",
		"| `5-1-1` | 2.000 | 1.000 | 0.4000 | 0.5000 | 2.000 | 0.800 | 4.000 |", // aerie-nocache ÷ vm-nocache, aerie ÷ vm
		"| `double-groupby-1` | error | 10.000 | error | 2.000 | — | — |",
		`agree except __name__ \| x`, // a '|' stays in its cell
		"| 20000 | 0.4000 | 0.8000 | 0.500 |",
		"fsync",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q", s)
		}
	}
}

func TestReportJSONAndTable(t *testing.T) {
	rep := sampleReport()
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	got, err := HTTP.Read("http.json", b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var md1, md2 bytes.Buffer
	rep.WriteMarkdown(&md1)
	got.WriteMarkdown(&md2)
	if md1.String() != md2.String() {
		t.Fatal("the report read back renders differently")
	}
	if _, err := HTTP.Read("node.json", []byte(`{"workload":"node","results":[]}`)); err == nil {
		t.Fatal("an engine report was read as an http report")
	}
	var tb bytes.Buffer
	if err := rep.WriteTable(&tb); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"0.500", "error", "acknowledges writes after fsync"} {
		if !strings.Contains(tb.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, tb.String())
		}
	}
}
