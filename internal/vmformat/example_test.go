package vmformat_test

import (
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/vmformat"
)

// Special values are written so that VictoriaMetrics reads the line too,
// except for the stale marker, which only Aerie keeps.
func ExampleAppendJSONLine() {
	lset := labels.FromStrings("__name__", "up", "job", "node")
	stale := math.Float64frombits(vmformat.StaleNaNBits)
	line := vmformat.AppendJSONLine(nil, lset,
		[]int64{1700000000000, 1700000015000, 1700000030000, 1700000045000},
		[]float64{1, math.NaN(), math.Inf(1), stale})
	os.Stdout.Write(line)
	// Output:
	// {"metric":{"__name__":"up","job":"node"},"values":[1,null,"Infinity","StaleNaN"],"timestamps":[1700000000000,1700000015000,1700000030000,1700000045000]}
}

// A bad line is reported with its place and the decoder goes on.
func ExampleJSONDecoder() {
	in := `{"metric":{"__name__":"up"},"values":[1],"timestamps":[1700000000000]}
{"metric":{"__name__":"up"},"values":[oops],"timestamps":[1700000015000]}
{"metric":{"__name__":"up"},"values":[0],"timestamps":[1700000030000]}
`
	d := vmformat.NewJSONDecoder(strings.NewReader(in), vmformat.Limits{})
	for d.Next() {
		if err := d.LineErr(); err != nil {
			fmt.Println(err)
			continue
		}
		s := d.Series()
		fmt.Println(s.Labels, s.Timestamps, s.Values)
	}
	if err := d.Err(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {__name__="up"} [1700000000000] [1]
	// line 2 col 39 (byte 109): values[0]: invalid value "oops"
	// {__name__="up"} [1700000030000] [0]
}

// CSV import by VictoriaMetrics' column spec: two metric columns give two
// samples per row.
func ExampleCSVDecoder() {
	f, err := vmformat.ParseCSVFormat("1:time:rfc3339,2:label:host,3:metric:cpu_user,4:metric:cpu_system")
	if err != nil {
		panic(err)
	}
	in := "2023-11-14T22:13:20Z,a,1.5,0.5\n2023-11-14T22:13:35Z,a,1.25,\n"
	d := vmformat.NewCSVDecoder(strings.NewReader(in), f, vmformat.Limits{}, 0)
	for d.Next() {
		if err := d.LineErr(); err != nil {
			fmt.Println(err)
			continue
		}
		for _, s := range d.Samples() {
			fmt.Println(s.Labels, s.T, s.V)
		}
	}
	// Output:
	// {__name__="cpu_user", host="a"} 1700000000000 1.5
	// {__name__="cpu_system", host="a"} 1700000000000 0.5
	// {__name__="cpu_user", host="a"} 1700000015000 1.25
}
