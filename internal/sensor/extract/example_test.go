package extract_test

import (
	"fmt"

	"github.com/aerie-db/aerie/internal/sensor/cond"
	"github.com/aerie-db/aerie/internal/sensor/extract"
)

// printer is an Emitter that prints.
type printer struct{ cols []string }

func (p printer) Point(t int64, v float64) error {
	fmt.Println(t, v)
	return nil
}

func (p printer) Row(t int64, vals []float64) error {
	fmt.Print(t)
	for i, v := range vals {
		fmt.Printf(" %s=%g", p.cols[i], v)
	}
	fmt.Println()
	return nil
}

func Example_aggregation() {
	fn, err := extract.ParseFunc("min,max,avg")
	if err != nil {
		panic(err)
	}
	// Windows [0, 10) and [10, 15), to inclusive.
	p := extract.Params{From: 0, To: 14, Interval: 10, Func: fn}
	op, err := extract.New(p, printer{fn.Columns()})
	if err != nil {
		panic(err)
	}
	for t, v := range []float64{4, 8, 6, 1, 3, 5, 7, 9, 2, 0, 10, 20} {
		if err := op.Push(int64(t), v); err != nil {
			panic(err)
		}
	}
	if err := op.Close(); err != nil {
		panic(err)
	}
	// Output:
	// 0 min=0 max=9 avg=4.5
	// 10 min=10 max=20 avg=15
}

func Example_transformation() {
	fn, _ := extract.ParseFunc("diff,movavg:2")
	op, _ := extract.New(extract.Params{From: 0, To: 100, Func: fn}, printer{})
	for t, v := range []float64{1, 2, 4, 8, 16} {
		op.Push(int64(t*10), v)
	}
	op.Close()
	// Output:
	// 10 1
	// 20 1.5
	// 30 3
	// 40 6
}

func ExampleAggregator_PushAgg() {
	// Hourly block metrics (internal/block.IntervalMetrics has the same
	// fields) merged into two-hour rows, without reading data.
	const hour = 3_600_000
	fn, _ := extract.ParseFunc("count,min,max,sum")
	a, _ := extract.NewAggregator(extract.Params{From: 0, To: 3*hour - 1, Interval: 2 * hour, Func: fn}, printer{fn.Columns()})
	hours := []extract.Agg{
		{Count: 3600, Min: 1, Max: 5, Sum: 9000, SumSq: 30000, First: 2, Last: 3},
		{Count: 3600, Min: 0, Max: 4, Sum: 7200, SumSq: 20000, First: 3, Last: 1},
		{Count: 1800, Min: 2, Max: 2, Sum: 3600, SumSq: 7200, First: 2, Last: 2},
	}
	for h, m := range hours {
		start := int64(h) * hour
		if err := a.PushAgg(start, start+hour, m); err != nil {
			panic(err)
		}
	}
	a.Close()
	// Output:
	// 0 count=7200 min=0 max=5 sum=16200
	// 7200000 count=1800 min=2 max=2 sum=3600
}

func ExampleMergeIntervals() {
	// Search by value matched these hourly metric intervals.
	const hour = 3_600_000
	spans := extract.MergeIntervals(nil, []int64{0, hour, 2 * hour, 5 * hour}, hour)
	fmt.Println(spans)
	// Output:
	// [{0 10800000} {18000000 21600000}]
}

func ExampleAgg_Value() {
	// Search by value: Agg.Value is the metric getter cond.Expr.Eval
	// wants, so one metric interval is tested without reading data.
	e, _ := cond.Parse("min lte 200 & max gte 50 | avg eq 75")
	m := extract.Agg{Count: 4, Min: 10, Max: 60, Sum: 140, SumSq: 6200, First: 10, Last: 60}
	fmt.Println(e.Eval(m.Value))
	avg, _ := m.Value(cond.Avg)
	fmt.Println(avg)
	// Output:
	// true
	// 35
}
