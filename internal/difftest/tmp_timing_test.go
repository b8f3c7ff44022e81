package difftest

import (
	"context"
	"testing"
	"time"
)

func TestTmpEmpty(t *testing.T) {
	w := Generate(Small())
	a := openProm(t, w)
	w.Write(t, a)
	ng := NewPromQLEngine()
	q := sortedQueryable{a}
	for _, e := range Expressions(w) {
		nonEmpty := false
		var errs []string
		for _, ts := range w.queryTimes() {
			qq, _ := ng.NewInstantQuery(context.Background(), q, nil, e, time.UnixMilli(ts))
			r := qq.Exec(context.Background())
			if r.Err != nil {
				errs = append(errs, r.Err.Error())
			} else if !emptyValue(r.Value) {
				nonEmpty = true
			}
			qq.Close()
		}
		if !nonEmpty || len(errs) > 0 {
			t.Logf("%v %q %s", nonEmpty, errs[:min(1, len(errs))], e)
		}
	}
}
