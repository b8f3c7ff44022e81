package compact_test

import (
	"fmt"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/compact"
)

// Six flushed 2 h partitions fill the first 12 h window; a backfilled
// block overlaps the seventh partition.
func ExamplePlan() {
	const h = int64(3600 * 1000)
	var metas []block.Meta
	for i := int64(0); i < 7; i++ {
		metas = append(metas, block.Meta{ULID: fmt.Sprint("p", i), MinTime: i * 2 * h, MaxTime: (i + 1) * 2 * h})
	}
	metas = append(metas, block.Meta{ULID: "backfill", MinTime: 12 * h, MaxTime: 14 * h, Seq: 1})
	ranges := compact.Ranges(2*h, 31*24*h)
	fmt.Println("ranges (h):", ranges[0]/h, ranges[1]/h, ranges[2]/h, ranges[3]/h)
	for _, j := range compact.Plan(metas, ranges, 14*h) {
		fmt.Printf("level %d [%dh, %dh): %v\n", j.Level, j.MinTime/h, j.MaxTime/h, j.Inputs)
	}
	// Output:
	// ranges (h): 2 12 48 192
	// level 1 [0h, 12h): [p0 p1 p2 p3 p4 p5]
	// level 1 [12h, 14h): [p6 backfill]
}
