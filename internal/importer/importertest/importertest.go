// Package importertest makes files of samples for the tests of imports
// (internal/importer, and `aerie import` in cmd/aerie) and counts what a
// data directory holds after one.
package importertest

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/tsdb"
	"github.com/aerie-db/aerie/internal/vmformat"
)

// Base is the first timestamp of the generated files.
const Base = int64(1_700_000_000_000)

// CSVFormat is the column spec of the generated CSV file.
const CSVFormat = "1:time:unix_ms,2:label:host,3:metric:disk_read,4:metric:disk_write"

// WantCounts is what CountDB finds after the generated files were
// imported.
var WantCounts = map[string]int{"up": 2880, "cpu_user": 2880, "mem_bytes": 2880, "disk_read": 2880, "disk_write": 2880}

// GenFiles writes the same kind of data in four formats, each file series
// by series (so unsorted by time) over three hours, and returns the files
// and the samples of all but the JSON lines file (which holds 2880 more).
// zipped: compress the JSON file with gzip and the Influx file with zstd.
func GenFiles(t testing.TB, dir string, zipped bool) ([]string, int) {
	t.Helper()
	const hosts, steps = 4, 720 // 15 s apart: 3 h
	var js, lp, prom, csv bytes.Buffer
	n := 0
	for h := range hosts {
		host := fmt.Sprintf("h%d", h)
		var ts []int64
		var vs []float64
		for i := range steps {
			t := Base + int64(i)*15_000
			v := float64(i*h) / 3
			ts, vs = append(ts, t), append(vs, v)
			fmt.Fprintf(&lp, "cpu,host=%s user=%v %d\n", host, v, t*1_000_000)
			fmt.Fprintf(&prom, "mem_bytes{host=%q} %v %d\n", host, v, t)
			fmt.Fprintf(&csv, "%d,%s,%v,%v\n", t, host, v, -v)
			n += 4
			if len(ts) == 100 {
				js.Write(vmformat.AppendJSONLine(nil, labels.FromStrings("__name__", "up", "host", host), ts, vs))
				ts, vs = ts[:0], vs[:0]
			}
		}
		js.Write(vmformat.AppendJSONLine(nil, labels.FromStrings("__name__", "up", "host", host), ts, vs))
	}
	write := func(name string, b []byte, z string) string {
		path := filepath.Join(dir, name)
		var out bytes.Buffer
		switch z {
		case "gz":
			zw := gzip.NewWriter(&out)
			zw.Write(b)
			require.NoError(t, zw.Close())
			path += ".gz"
		case "zst":
			zw, err := zstd.NewWriter(&out)
			require.NoError(t, err)
			zw.Write(b)
			require.NoError(t, zw.Close())
			path += ".zst"
		default:
			out.Write(b)
		}
		require.NoError(t, os.WriteFile(path, out.Bytes(), 0o644))
		return path
	}
	jz, lz := "", ""
	if zipped {
		jz, lz = "gz", "zst"
	}
	return []string{
		write("up.jsonl", js.Bytes(), jz),
		write("cpu.lp", lp.Bytes(), lz),
		write("mem.prom", prom.Bytes(), ""),
		write("disk.csv", csv.Bytes(), ""),
	}, n
}

// CountDB counts the samples of a data directory by series name.
func CountDB(t testing.TB, dir string) map[string]int {
	t.Helper()
	db, err := tsdb.Open(dir, &tsdb.Options{FlushCheckInterval: -1})
	require.NoError(t, err)
	defer db.Close()
	q, err := db.Querier(math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	defer q.Close()
	ss := q.Select(context.Background(), true, nil, labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+"))
	out := map[string]int{}
	var it chunkenc.Iterator
	for ss.Next() {
		it = ss.At().Iterator(it)
		for it.Next() == chunkenc.ValFloat {
			out[ss.At().Labels().Get(labels.MetricName)]++
		}
		require.NoError(t, it.Err())
	}
	require.NoError(t, ss.Err())
	return out
}
