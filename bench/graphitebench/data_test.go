package graphitebench

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/bench/harness"
)

// TestPayloads: the clients' payloads together hold every point of the
// dataset once, in carbon's line format, each client's steps in order,
// and their values sum to dataset.sum.
func TestPayloads(t *testing.T) {
	d := dataset{Hosts: 7, Steps: 5, End: 1_700_000_000}
	p := d.payloads(3)
	require.Len(t, p, 3)
	seen := map[string]int{}
	var sum float64
	for c, b := range p {
		lastTS := int64(0)
		for line := range strings.SplitSeq(strings.TrimSuffix(string(b), "\n"), "\n") {
			f := strings.Fields(line)
			require.Len(t, f, 3, line)
			v, err := strconv.ParseInt(f[1], 10, 64)
			require.NoError(t, err, line)
			ts, err := strconv.ParseInt(f[2], 10, 64)
			require.NoError(t, err, line)
			require.GreaterOrEqual(t, ts, lastTS, "client %d: steps out of order at %q", c, line)
			require.True(t, ts >= d.start() && ts <= d.End && (ts-d.start())%10 == 0, line)
			lastTS = ts
			host, err := strconv.Atoi(strings.TrimPrefix(strings.Split(f[0], ".")[1], "host"))
			require.NoError(t, err, line)
			require.Equal(t, c, host%3, "client %d sends host %d", c, host)
			seen[f[0]+" "+f[2]]++
			sum += float64(v)
		}
	}
	require.Len(t, seen, int(d.points()))
	for k, n := range seen {
		require.Equal(t, 1, n, k)
	}
	require.Equal(t, d.sum(), sum)
	require.Len(t, d.names(), d.series())
	require.Equal(t, 50, MetricsPerHost)
}

// TestValues: counters never decrease; gauges stay in [0, 1000).
func TestValues(t *testing.T) {
	for h := range 20 {
		for m, mt := range metrics {
			prev := int64(-1)
			for st := range 100 {
				v := value(h, m, st)
				if mt.counter {
					require.Greater(t, v, prev, "%s step %d", seriesName(h, m), st)
				} else {
					require.True(t, v >= 0 && v < 1000, "%s step %d: %d", seriesName(h, m), st, v)
				}
				prev = v
			}
		}
	}
}

// whisperFile builds a whisper file of one archive of slots points of
// step seconds holding pts (interval → value) at their ring positions.
func whisperFile(slots, step int, pts map[uint32]float64) []byte {
	b := make([]byte, whisperHeader+whisperArchive+slots*whisperPoint)
	binary.BigEndian.PutUint32(b[0:], 1)
	binary.BigEndian.PutUint32(b[4:], uint32(slots*step))
	binary.BigEndian.PutUint32(b[8:], math.Float32bits(0.5))
	binary.BigEndian.PutUint32(b[12:], 1)
	binary.BigEndian.PutUint32(b[16:], whisperHeader+whisperArchive)
	binary.BigEndian.PutUint32(b[20:], uint32(step))
	binary.BigEndian.PutUint32(b[24:], uint32(slots))
	for ts, v := range pts {
		off := whisperHeader + whisperArchive + int(ts/uint32(step))%slots*whisperPoint
		binary.BigEndian.PutUint32(b[off:], ts)
		binary.BigEndian.PutUint64(b[off+4:], math.Float64bits(v))
	}
	return b
}

func TestCountWhisper(t *testing.T) {
	dir := t.TempDir()
	pts := map[uint32]float64{1000: 1, 1010: 2, 1020: 4, 900: 100} // 900 is outside [1000, 1020]
	path := whisperPath(dir, "bench.host00000.cpu.0.user")
	require.Equal(t, filepath.Join(dir, "bench/host00000/cpu/0/user.wsp"), path)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, whisperFile(64, 10, pts), 0o644))
	n, sum, err := countWhisper(path, 1000, 1020)
	require.NoError(t, err)
	require.Equal(t, int64(3), n)
	require.Equal(t, 7.0, sum)

	n, _, err = countWhisper(filepath.Join(dir, "missing.wsp"), 0, 1<<31)
	require.NoError(t, err)
	require.Zero(t, n)

	good := whisperFile(8, 10, nil)
	for _, tc := range []struct {
		name string
		b    []byte
		want string
	}{
		{"short", good[:20], "shorter than a header"},
		{"no archives", func() []byte { b := bytes.Clone(good); binary.BigEndian.PutUint32(b[12:], 0); return b }(), "no archives"},
		{"past the end", good[:len(good)-1], "outside the file"},
		{"offset in header", func() []byte { b := bytes.Clone(good); binary.BigEndian.PutUint32(b[16:], 4); return b }(), "outside the file"},
		{"huge", func() []byte { b := bytes.Clone(good); binary.BigEndian.PutUint32(b[24:], 1<<30); return b }(), "outside the file"},
	} {
		_, _, err := countArchive(tc.name, tc.b, 0, 1<<31)
		require.ErrorContains(t, err, tc.want, tc.name)
	}
}

// FuzzCountArchive: any bytes give a count or an error, never a panic,
// and never more points than the file has slots.
func FuzzCountArchive(f *testing.F) {
	f.Add(whisperFile(8, 10, map[uint32]float64{10: 1, 20: 2}))
	f.Add([]byte{})
	f.Add(make([]byte, 40))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, _, err := countArchive("fuzz", b, 0, 1<<32)
		if err == nil && n*whisperPoint > int64(len(b)) {
			t.Fatalf("%d points from %d bytes", n, len(b))
		}
	})
}

func TestConfigCheck(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Options: harness.Options{Scale: "huge"}}, `--scale="huge"`},
		{Config{Options: harness.Options{Scale: "small"}, Series: 100}, "at least 5000"},
		{Config{Options: harness.Options{Scale: "small"}, CarbonSeries: 10_000}, "want carbon's ≤ Aerie's"},
		{Config{Options: harness.Options{Scale: "small"}, Span: 15 * time.Second}, "whole 10 s steps"},
		{Config{Options: harness.Options{Scale: "small"}, Clients: 65}, "at most 64"},
	} {
		require.ErrorContains(t, tc.cfg.check(), tc.want, "%+v", tc.cfg)
	}
	cfg := Config{Options: harness.Options{Scale: "medium"}, Series: 600_020}
	require.NoError(t, cfg.check())
	require.Equal(t, 600_000, cfg.Series)
	require.Equal(t, 20_000, cfg.CarbonSeries)
	require.Equal(t, 4, cfg.Clients)
}
