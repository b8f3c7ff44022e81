package expr_test

import (
	"context"
	"fmt"
	"math"

	"github.com/aerie-db/aerie/internal/graphite/expr"
)

// memFetcher serves two fixed series for any path.
type memFetcher struct{}

func (memFetcher) Fetch(ctx context.Context, pathExpr string, from, until int64) ([]*expr.Series, error) {
	mk := func(name string, vs ...float64) *expr.Series {
		return &expr.Series{Name: name, Start: from, Step: 10, End: from + 10*int64(len(vs)), Values: vs}
	}
	return []*expr.Series{
		mk("web1.cpu", 1, 2, math.NaN()),
		mk("web2.cpu", 3, 4, 5),
	}, nil
}

func (memFetcher) FetchTagged(ctx context.Context, exprs []string, from, until int64) ([]*expr.Series, error) {
	return nil, nil
}

func Example() {
	e, err := expr.Parse("web*.cpu|sumSeries()|scale(2)")
	if err != nil {
		panic(err)
	}
	series, err := expr.Eval(context.Background(), e, 0, 30, 30, memFetcher{})
	if err != nil {
		panic(err)
	}
	for _, s := range series {
		fmt.Println(s.Name, s.Start, s.Step, s.Values)
	}
	// Output:
	// scale(sumSeries(web*.cpu),2) 0 10 [8 12 10]
}

func ExampleParseOffset() {
	for _, s := range []string{"-1h", "5min", "1d12h", "2w"} {
		n, _ := expr.ParseOffset(s)
		fmt.Println(s, n)
	}
	_, err := expr.ParseOffset("1m")
	fmt.Println(err)
	// Output:
	// -1h -3600
	// 5min 300
	// 1d12h 129600
	// 2w 1209600
	// invalid time offset "1m" at byte 1: invalid unit "m" (want s, min, h, d, w, mon or y)
}

func ExampleIsBadRequest() {
	e, _ := expr.Parse("nosuch(a.b)")
	_, err := expr.Eval(context.Background(), e, 0, 60, 60, memFetcher{})
	fmt.Println(expr.IsBadRequest(err), err)
	// Output:
	// true unknown function "nosuch" at byte 0
}
