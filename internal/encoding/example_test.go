package encoding_test

import (
	"fmt"

	"github.com/aerie-db/aerie/internal/encoding"
)

// A head group appends a time tuple per 8 rows and a value tuple per series.
func ExampleAppendTimeTuple() {
	ts := []int64{1000, 2000, 3001, 3999}
	tuple := encoding.AppendTimeTuple(nil, ts)
	first, _ := encoding.TimeTupleFirst(tuple)
	back, n, err := encoding.DecodeTimeTuple(nil, tuple, len(ts))
	fmt.Println(len(tuple), first, back, n, err)
	// Output: 14 1000 [1000 2000 3001 3999] 14 <nil>
}

// A block stores the meta in its index; the byte range of any run of tuples
// follows from the meta alone.
func ExampleColumnMeta_TupleRange() {
	vals := []float64{1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4}
	data, meta := encoding.AppendColumn(nil, vals, nil, 4, 2)
	off, end := meta.TupleRange(1, 2)
	got, present, err := encoding.DecodeColumnTuple(nil, nil, &meta, data[off:], 1)
	fmt.Println(meta.NumTuples(), meta.Widths, off, end, len(data))
	fmt.Println(got, present, err)
	// Output:
	// 3 [5 3] 5 13 13
	// [2 2 3 3] [true true true true] <nil>
}
