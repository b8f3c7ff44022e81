package spool

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSpool(t *testing.T) {
	type pt struct{ t, row int64 }
	for _, c := range []struct {
		name    string
		in      []int64
		memMax  int
		rows    bool
		sorted  bool // as added
		want    []int64
		sortErr bool
	}{
		{"in order, memory", []int64{1, 2, 3}, 8, false, true, []int64{1, 2, 3}, false},
		{"in order, file", []int64{1, 2, 3, 4, 5}, 2, true, true, []int64{1, 2, 3, 4, 5}, false},
		{"out of order, memory: sorted", []int64{3, 1, 2}, 8, true, false, []int64{1, 2, 3}, false},
		{"repeat, memory: dropped", []int64{1, 2, 2, 3}, 8, false, false, []int64{1, 2, 3}, false},
		{"out of order, file: as added", []int64{3, 1, 2}, 1, true, false, []int64{3, 1, 2}, false},
		{"two values at one time", []int64{1, -1}, 8, false, false, nil, true},
	} {
		s := &Spool{Dir: t.TempDir(), MemMax: c.memMax, Rows: c.rows}
		for i, x := range c.in {
			v := float64(x)
			if x < 0 { // another value at the time before
				x, v = -x, 99
			}
			require.NoError(t, s.Add(x, v, int64(i+10)), c.name)
		}
		require.Equal(t, c.sorted, s.Sorted(), c.name)
		err := s.SortMem()
		if c.sortErr {
			require.Error(t, err, c.name)
			continue
		}
		require.NoError(t, err, c.name)
		it, err := s.Iter()
		require.NoError(t, err)
		var got []int64
		for it.Next() {
			tt, v := it.At()
			require.Equal(t, float64(tt), v, c.name)
			if c.rows {
				require.Equal(t, c.in[it.Row()-10], tt, "%s: the row given back with its point", c.name)
			}
			if len(got) == 1 {
				it.Unread()
				require.True(t, it.Next())
				t2, _ := it.At()
				require.Equal(t, tt, t2, "%s: Unread gives the point again", c.name)
			}
			got = append(got, tt)
		}
		require.NoError(t, it.Err())
		require.Equal(t, c.want, got, c.name)
		require.Equal(t, int64(len(c.want)), s.Len(), c.name)
		require.Equal(t, int64(len(c.in)-len(c.want)), s.Dups(), c.name)
		s.Close()
	}
}
