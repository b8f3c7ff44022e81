package difftest

import (
	"context"
	"sort"
	"testing"
	"time"
)

func TestTmpTiming(t *testing.T) {
	w := Generate(Full())
	a := openProm(t, w)
	w.Write(t, a)
	ng := NewPromQLEngine()
	q := sortedQueryable{a}
	type d struct {
		e       string
		in, rng time.Duration
	}
	var ds []d
	var tin, trng time.Duration
	for _, e := range Expressions(w) {
		s := time.Now()
		for _, ts := range w.queryTimes() {
			qq, _ := ng.NewInstantQuery(context.Background(), q, nil, e, time.UnixMilli(ts))
			qq.Exec(context.Background())
			qq.Close()
		}
		in := time.Since(s)
		s = time.Now()
		for _, rs := range w.queryRanges() {
			qq, _ := ng.NewRangeQuery(context.Background(), q, nil, e, time.UnixMilli(rs.start), time.UnixMilli(rs.end), time.Duration(rs.step)*time.Millisecond)
			qq.Exec(context.Background())
			qq.Close()
		}
		ds = append(ds, d{e, in, time.Since(s)})
		tin += in
		trng += time.Since(s)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].in+ds[i].rng > ds[j].in+ds[j].rng })
	t.Logf("instant %s range %s", tin, trng)
	for _, x := range ds[:40] {
		t.Logf("%8s %8s %s", x.in.Round(time.Millisecond), x.rng.Round(time.Millisecond), x.e)
	}
}
