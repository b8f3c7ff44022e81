package sensorbench

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

func TestDecodeRecords(t *testing.T) {
	f := func(writer, body string, n, first, last int64) {
		t.Helper()
		rs, err := decodeRecords(writer, strings.NewReader(body))
		require.NoError(t, err, "%s %q", writer, body)
		require.Equal(t, records{n: n, first: first, last: last}, rs, "%s %q", writer, body)
	}
	f("csv", "", 0, 0, 0)
	f("csv", "1,2.5\n2,NaN\n3,-1\n", 3, 1, 3)
	f("csv", "1,2.5\r\n2,3", 2, 1, 2)
	f("csv", "t,min,max,avg\n3600000,1,2,1.5\n7200000,1,2,1.5\n", 2, 3600000, 7200000)
	f("json", "[]", 0, 0, 0)
	f("json", `[{"t":1,"v":2.5},{"t":2,"v":"NaN"},{"v":-1,"t":3}]`, 3, 1, 3)
	f("json", "[\n {\"t\": 10 , \"v\": 1},\n {\"t\":20,\"v\":1e-7}\n]\n", 2, 10, 20)
	f("json", `[{"t":3600000,"min":0.5,"max":2,"avg":1}]`, 1, 3600000, 3600000)
	f("json", `{"t":1,"v":2}{"t":2,"v":3}`, 2, 1, 2) // NDJSON-like stream
	f("json", `[{"t":1,"v":"a \"t\": 9, }"}]`, 1, 1, 1)

	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	for _, ts := range []int64{5, 6, 7} {
		require.NoError(t, enc.Encode(map[string]any{"t": ts, "v": 1.5}))
	}
	f("msgp", buf.String(), 3, 5, 7)
	buf.Reset()
	require.NoError(t, enc.Encode([]map[string]any{{"t": int64(1), "min": 1.0}, {"t": int64(2), "min": 2.0}}))
	f("msgp", buf.String(), 2, 1, 2)
}

func TestDecodeRecordsErrors(t *testing.T) {
	f := func(writer, body, msg string) {
		t.Helper()
		_, err := decodeRecords(writer, strings.NewReader(body))
		require.ErrorContains(t, err, msg, "%s %q", writer, body)
	}
	f("csv", "1,2\nx,3\n", "line 2")
	f("json", `[{"t":1,"v":2},{"v":3}]`, `without "t"`)
	f("json", `[{"t":1.5,"v":2}]`, "not an integer")
	f("json", `[{"t":1,"v":2}`, "ends inside")
	var buf bytes.Buffer
	require.NoError(t, msgpack.NewEncoder(&buf).Encode(map[string]any{"v": 1.5}))
	f("msgp", buf.String(), `no "t"`)
	f("xml", "", "unknown writer")
}

func TestDecodeVMExport(t *testing.T) {
	body := `{"metric":{"__name__":"sensor_0001"},"values":[1,2,3],"timestamps":[1000,2000,3000]}
{"metric":{"__name__":"sensor_0001"},"values":[4],"timestamps":[4000]}
`
	rs, err := decodeVMExport(bufio.NewReader(strings.NewReader(body)))
	require.NoError(t, err)
	require.Equal(t, records{n: 4, first: 1000, last: 4000}, rs)
	_, err = decodeVMExport(bufio.NewReader(strings.NewReader(`{"metric":{}}`)))
	require.ErrorContains(t, err, "no \"timestamps\"")
}

func TestIntervals(t *testing.T) {
	m, err := parseNativeSearch([]byte(`{"status":"success","data":[{"metric":{"__name__":"a"},"intervals":[{"from":0,"to":3599999}]},{"metric":{"__name__":"b"},"intervals":[]}]}`))
	require.NoError(t, err)
	require.Equal(t, map[string][]interval{"a": {{0, hourMs - 1}}}, m)
	_, err = parseNativeSearch([]byte(`{"status":"error","error":"bad cond"}`))
	require.ErrorContains(t, err, "bad cond")

	// VictoriaMetrics' points at the ends of hours 1, 2 and 4 of the
	// epoch are the hours [0, 2h) and [3h, 4h).
	v, err := vmIntervals([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"a"},"values":[[3600,"1"],[7200,"1"],[14400,"2"]]}]}}`))
	require.NoError(t, err)
	require.Equal(t, map[string][]interval{"a": {{0, 2*hourMs - 1}, {3 * hourMs, 4*hourMs - 1}}}, v)
	require.Empty(t, sameIntervals(v, v))
	require.Contains(t, sameIntervals(v, map[string][]interval{"a": {{0, 2*hourMs - 1}}}), "a: 2 intervals, want 1; first difference at #1")
	require.Contains(t, sameIntervals(map[string][]interval{}, m), "a: 0 intervals, want 1")
}
