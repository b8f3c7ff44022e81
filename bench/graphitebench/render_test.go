package graphitebench

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestCompareAnswers(t *testing.T) {
	g := decodeAnswer([]byte(`[{"target":"a","datapoints":[[1,10],[null,20],[3,30]]},{"target":"b","datapoints":[[1,10]]}]`))
	require.NoError(t, g.decoded)
	require.Equal(t, 3, g.points)
	require.Equal(t, 1, g.nulls)
	for _, tc := range []struct {
		name, aerie string
		diffs       int
		example     string
	}{
		{"equal", `[{"target":"a","datapoints":[[1,10],[null,20],[3,30]]},{"target":"b","datapoints":[[1,10]]}]`, 0, ""},
		{"within tolerance", `[{"target":"a","datapoints":[[1.0000000000001,10],[null,20],[3,30]]},{"target":"b","datapoints":[[1,10]]}]`, 0, ""},
		{"value", `[{"target":"a","datapoints":[[1,10],[null,20],[3.1,30]]},{"target":"b","datapoints":[[1,10]]}]`, 1, "a at 30: 3.1, graphite-web 3"},
		{"null for value", `[{"target":"a","datapoints":[[1,10],[2,20],[3,30]]},{"target":"b","datapoints":[[1,10]]}]`, 1, "a at 20: 2, graphite-web null"},
		{"time", `[{"target":"a","datapoints":[[1,11],[null,20],[3,30]]},{"target":"b","datapoints":[[1,10]]}]`, 1, "time 11"},
		{"missing series", `[{"target":"a","datapoints":[[1,10],[null,20],[3,30]]}]`, 1, `missing series "b"`},
		{"target", `[{"target":"a","datapoints":[[1,10],[null,20],[3,30]]},{"target":"c","datapoints":[[1,10]]}]`, 0, `target "c"`},
		{"short", `[{"target":"a","datapoints":[[1,10],[null,20]]},{"target":"b","datapoints":[[1,10]]}]`, 1, "2 points"},
		{"undecodable", `{`, 4, "undecodable"},
	} {
		diffs, ex := compareAnswers(decodeAnswer([]byte(tc.aerie)), g)
		require.Equal(t, tc.diffs, diffs, tc.name)
		if tc.example == "" {
			require.Empty(t, ex, tc.name)
		} else {
			require.NotEmpty(t, ex, tc.name)
			require.Contains(t, strings.Join(ex, "; "), tc.example, tc.name)
		}
	}
}

func TestLatency(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		var out []time.Duration
		for _, x := range xs {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	require.Equal(t, Latency{P50Ms: 5, P90Ms: 9}, latency(ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1)))
	require.Equal(t, Latency{P50Ms: 3, P90Ms: 3}, latency(ms(3)))
	require.Equal(t, Latency{}, latency(nil))
}

// TestPanels: 20 panels over 1 h, 6 h and 24 h, each reading hosts that
// every scale has, and their query strings say what Grafana sends.
func TestPanels(t *testing.T) {
	require.Len(t, Panels, 20)
	ranges := map[time.Duration]int{}
	for _, p := range Panels {
		ranges[p.Range]++
		require.Contains(t, p.Target, "bench.host", p.Name)
		require.NotContains(t, p.Target, "host0001", p.Name) // host000?? is the widest: 100 hosts
	}
	require.Len(t, ranges, 3)
	q := renderQuery(Panels[0], 1_700_000_000)
	require.Contains(t, q, "from=1699996400")
	require.Contains(t, q, "until=1700000000")
	require.Contains(t, q, "maxDataPoints=1000")
	require.Contains(t, q, "format=json")
}
