package cond_test

import (
	"fmt"

	"github.com/aerie-db/aerie/internal/sensor/cond"
)

func ExampleParse() {
	e, err := cond.Parse("min lte 200 & max gte 50 | avg eq 75")
	if err != nil {
		panic(err)
	}
	fmt.Println(e)
	fmt.Println(e.Metrics())

	// One metric interval's block metrics.
	metrics := map[cond.Metric]float64{cond.Min: 120, cond.Max: 80, cond.Avg: 95}
	fmt.Println(e.Eval(func(m cond.Metric) (float64, bool) {
		v, ok := metrics[m]
		return v, ok
	}))
	// Output:
	// ((min lte 200 & max gte 50) | avg eq 75)
	// [min max avg]
	// true
}

func ExampleParse_error() {
	_, err := cond.Parse("min lte 200 & max <= 50")
	fmt.Println(err)
	// Output:
	// condition: byte 18: expected operator (lt, lte, gt, gte, eq, ne), found "<="
}

func ExampleExpr_Metrics() {
	// A caller without sketches refuses quantiles up front.
	e, _ := cond.Parse("p99 gt 500 | max gt 1000")
	for _, m := range e.Metrics() {
		if _, ok := m.Quantile(); ok {
			fmt.Printf("%s needs the data: block metrics hold no sketch\n", m)
		}
	}
	// Output:
	// p99 needs the data: block metrics hold no sketch
}
