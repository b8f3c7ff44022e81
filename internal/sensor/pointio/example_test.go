package pointio_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/sensor/pointio"
)

// An upload: POST /upload/s1/csv/2-0-;/int8 with a header line and a
// value that int8 cannot hold.
func ExampleNewReader() {
	body := strings.NewReader("value;room;time\n21;a;1700000000000\n300;a;1700000060000\n")
	r, err := pointio.NewReader("csv", "2-0-;", pointio.Int8, body, pointio.Limits{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for r.Next() {
		t, v := r.At()
		fmt.Println(t, v, "row", r.Row(), "byte", r.Offset())
	}
	fmt.Println(r.Err())
	// Output:
	// 1700000000000 21 row 2 byte 16
	// row 3 (byte 35), field "v": value 300 does not fit int8 (-128 to 127)
}

// A Peregreen extract answer: points without framing.
func ExampleNewWriter() {
	w, _ := pointio.NewWriter("json", os.Stdout)
	w.Point(1700000000000, 21.5)
	w.Point(1700000060000, 21.7)
	w.Close()
	// Output:
	// [{"t":1700000000000,"v":21.5},{"t":1700000060000,"v":21.7}]
}

// A native API search answer: intervals of two series, framed.
func ExampleWriter_series() {
	w, _ := pointio.NewWriter("json", os.Stdout)
	w.Begin(pointio.Layout{Shape: pointio.Intervals, Series: true})
	w.BeginSeries(labels.FromStrings("__name__", "s1", "site", "a"))
	w.Interval(1700000000000, 1700000600000)
	w.EndSeries()
	w.BeginSeries(labels.FromStrings("__name__", "s2"))
	w.EndSeries()
	w.Close()
	// Output:
	// {"status":"success","data":[{"metric":{"__name__":"s1","site":"a"},"intervals":[{"from":1700000000000,"to":1700000600000}]},{"metric":{"__name__":"s2"},"intervals":[]}]}
}

// An aggregation answer in CSV: a header names the columns.
func ExampleWriter_rows() {
	w, _ := pointio.NewWriter("csv", os.Stdout)
	w.Begin(pointio.Layout{Shape: pointio.Rows, Columns: []string{"min", "max"}})
	w.Row(1700000000000, []float64{20.5, 23})
	w.Close()
	// Output:
	// t,min,max
	// 1700000000000,20.5,23
}
