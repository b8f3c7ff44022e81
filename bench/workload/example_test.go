package workload_test

import (
	"fmt"
	"time"

	"github.com/aerie-db/aerie/bench/workload"
)

// A runner asks each target for its series once, then streams its rows.
func Example() {
	w, err := workload.New("tsbs", workload.Spec{Targets: 2, Duration: time.Minute, Jitter: -1, Seed: 1})
	if err != nil {
		panic(err)
	}
	fmt.Println(w.Name(), w.NumTargets(), "hosts,", len(w.Series(0)), "series each,", w.Samples(), "samples every", w.Interval())
	fmt.Println(w.Series(0)[0].Get("__name__"), w.Series(0)[0].Get("hostname"))
	var row workload.Row
	s := w.Scraper(0)
	rows := 0
	for s.Next(&row) {
		if rows == 0 {
			fmt.Println("first row at", row.T-workload.DefaultStart, "ms past the start:", len(row.Values), "values")
		}
		rows++
	}
	fmt.Println(rows, "rows")
	// Output:
	// tsbs 2 hosts, 10 series each, 120 samples every 10s
	// cpu_usage_guest host_0
	// first row at 0 ms past the start: 10 values
	// 6 rows
}
