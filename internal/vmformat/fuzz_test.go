package vmformat

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"
)

// Fuzz targets: every parser is fed the raw fuzz bytes and must report a
// bad line with a position inside the input, never panic; every record it
// returns must encode deterministically and decode back to the same
// labels, timestamps and value bits, and that encoding must be a fixed
// point. Seed corpora live in testdata/fuzz/FuzzX/. Run one with:
// go test -run=NONE -fuzz=FuzzJSONLines -fuzztime=30s ./internal/vmformat

// fuzzLimits are small, so that the limits are reached too.
var fuzzLimits = Limits{MaxLineBytes: 4 << 10, MaxLabels: 8, MaxLabelNameBytes: 32, MaxLabelValueBytes: 64}

func checkParseError(t *testing.T, err error, data []byte) {
	t.Helper()
	var pe *ParseError
	require.True(t, errors.As(err, &pe), "line error of type %T", err)
	require.Positive(t, pe.Line)
	require.GreaterOrEqual(t, pe.Offset, int64(0))
	require.LessOrEqual(t, pe.Offset, int64(len(data)))
	require.NotEmpty(t, pe.Msg)
}

func requireSameBits(t *testing.T, want, got []float64) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, math.Float64bits(want[i]), math.Float64bits(got[i]), "value %d", i)
	}
}

func FuzzJSONLines(f *testing.F) {
	f.Add([]byte(`{"metric":{"__name__":"up","job":"a"},"values":[1,0.5,null,"StaleNaN"],"timestamps":[1700000000000,1700000015000,3,4]}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := NewJSONDecoder(bytes.NewReader(data), fuzzLimits)
		for d.Next() {
			if err := d.LineErr(); err != nil {
				checkParseError(t, err, data)
				continue
			}
			s := d.Series()
			enc := AppendJSONLine(nil, s.Labels, s.Timestamps, s.Values)
			require.Equal(t, enc, AppendJSONLine(nil, s.Labels, s.Timestamps, s.Values), "encoding is not deterministic")

			d2 := NewJSONDecoder(bytes.NewReader(enc), Limits{})
			require.True(t, d2.Next())
			require.NoError(t, d2.LineErr(), "%s", enc)
			s2 := d2.Series()
			require.True(t, labels.Equal(s.Labels, s2.Labels), "%s != %s", s.Labels, s2.Labels)
			require.Equal(t, s.Timestamps, s2.Timestamps)
			requireSameBits(t, s.Values, s2.Values)
			require.Equal(t, enc, AppendJSONLine(nil, s2.Labels, s2.Timestamps, s2.Values), "encoding is not a fixed point")
			require.False(t, d2.Next())
		}
		require.NoError(t, d.Err())
	})
}

// fuzzCSVSpecs are the import specs FuzzCSV picks from.
var fuzzCSVSpecs = []string{
	"1:time:unix_ms,2:metric:m,3:label:a,4:label:b",
	"1:label:__name__,2:metric:m,3:time:rfc3339,4:label:x",
	"2:metric:ask,3:metric:bid,1:label:ticker",
	"1:time:unix_s,2:metric:m,4:metric:n",
	"1:time:unix_ns,2:label:l,3:metric:m",
	"1:time:custom:2006-01-02 15:04:05.000,2:metric:v",
}

func FuzzCSV(f *testing.F) {
	f.Add(uint8(0), []byte("1700000000000,1.5,x,\"y,z\"\n"))
	f.Fuzz(func(t *testing.T, spec uint8, data []byte) {
		format, err := ParseCSVFormat(fuzzCSVSpecs[int(spec)%len(fuzzCSVSpecs)])
		require.NoError(t, err)

		// The export that round-trips: name, value, exact time, labels;
		// and the import spec that reads it.
		names := []string{labels.MetricName, "__value__", "__timestamp__:unix_ms"}
		back := []string{"1:label:__name__", "2:metric:fallback", "3:time:unix_ms"}
		for _, c := range format.cols {
			if c.kind == colLabel && c.name != labels.MetricName {
				names = append(names, c.name)
				back = append(back, strconv.Itoa(len(names))+":label:"+c.name)
			}
		}
		exportFormat, err := ParseCSVExportFormat(strings.Join(names, ","))
		require.NoError(t, err)
		backFormat, err := ParseCSVFormat(strings.Join(back, ","))
		require.NoError(t, err)

		d := NewCSVDecoder(bytes.NewReader(data), format, fuzzLimits, 1700000000000)
		for d.Next() {
			if err := d.LineErr(); err != nil {
				checkParseError(t, err, data)
				continue
			}
			for _, s := range d.Samples() {
				enc := AppendCSVRow(nil, exportFormat, s.Labels, s.T, s.V)
				require.Equal(t, enc, AppendCSVRow(nil, exportFormat, s.Labels, s.T, s.V), "encoding is not deterministic")
				d2 := NewCSVDecoder(bytes.NewReader(enc), backFormat, Limits{}, 0)
				require.True(t, d2.Next())
				require.NoError(t, d2.LineErr(), "%q", enc)
				got := d2.Samples()
				require.Len(t, got, 1)
				require.True(t, labels.Equal(s.Labels, got[0].Labels), "%s != %s", s.Labels, got[0].Labels)
				require.Equal(t, s.T, got[0].T)
				requireSameBits(t, []float64{s.V}, []float64{got[0].V})
				require.Equal(t, enc, AppendCSVRow(nil, exportFormat, got[0].Labels, got[0].T, got[0].V), "encoding is not a fixed point")
				require.False(t, d2.Next())
			}
		}
		require.NoError(t, d.Err())
	})
}

func FuzzCSVFormat(f *testing.F) {
	f.Add("1:time:unix_ms,2:metric:cpu,3:label:host")
	f.Add("__name__,__value__,__timestamp__:unix_ms,host")
	f.Fuzz(func(t *testing.T, spec string) {
		if cf, err := ParseCSVFormat(spec); err == nil {
			canon := cf.String()
			cf2, err := ParseCSVFormat(canon)
			require.NoError(t, err, canon)
			require.Equal(t, canon, cf2.String())
		}
		if ef, err := ParseCSVExportFormat(spec); err == nil {
			canon := ef.String()
			ef2, err := ParseCSVExportFormat(canon)
			require.NoError(t, err, canon)
			require.Equal(t, canon, ef2.String())
		}
	})
}
