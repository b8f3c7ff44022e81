package ingest

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkInfluxIngest posts Telegraf-like bodies (cpu, mem and disk of
// 20 hosts, 50 timestamps: 19,000 samples a request) to the in-process
// handler over a DB with the default WAL (fsync per commit).
//
//	go test -run '^$' -bench BenchmarkInfluxIngest -count 6 ./internal/ingest > new.txt
//	benchstat old.txt new.txt
func BenchmarkInfluxIngest(b *testing.B) {
	for _, gz := range []bool{false, true} {
		b.Run(fmt.Sprintf("gzip=%v", gz), func(b *testing.B) {
			db := openDB(b, nil)
			h := NewInfluxHandler(db, Options{})
			rng := rand.New(rand.NewPCG(1, 2))
			const hosts, steps = 20, 50
			var samples int
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				body, n := telegrafBody(rng, hosts, steps, int64(i)*steps)
				r := request{url: "/write?precision=s", body: body, gzip: gz}
				b.StartTimer()
				rec := serve(b, h, r)
				if rec.Code != http.StatusNoContent {
					b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
				}
				samples += n
			}
			b.ReportMetric(float64(samples)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

// telegrafBody returns lines as Telegraf's cpu, mem and disk inputs write
// them, every 10 s from step0, and the number of samples.
func telegrafBody(rng *rand.Rand, hosts, steps int, step0 int64) ([]byte, int) {
	var sb strings.Builder
	n := 0
	for s := range int64(steps) {
		ts := 1_700_000_000 + (step0+s)*10
		for hst := range hosts {
			fmt.Fprintf(&sb, "cpu,cpu=cpu-total,host=host%02d usage_user=%.3f,usage_system=%.3f,usage_idle=%.3f,usage_iowait=%.3f,usage_irq=0,usage_softirq=%.3f,usage_steal=0 %d\n",
				hst, rng.Float64()*30, rng.Float64()*10, 60+rng.Float64()*30, rng.Float64(), rng.Float64()/10, ts)
			fmt.Fprintf(&sb, "mem,host=host%02d total=16777216000i,used=%di,free=%di,available_percent=%.2f,buffered=%di,cached=%di %d\n",
				hst, rng.Int64N(1<<33), rng.Int64N(1<<33), rng.Float64()*100, rng.Int64N(1<<28), rng.Int64N(1<<32), ts)
			fmt.Fprintf(&sb, "disk,device=sda1,fstype=ext4,host=host%02d,mode=rw,path=/ total=500000000000i,free=%di,used=%di,used_percent=%.2f,inodes_total=30000000i,inodes_free=%di %d\n",
				hst, rng.Int64N(1<<38), rng.Int64N(1<<38), rng.Float64()*100, rng.Int64N(30000000), ts)
			n += 7 + 6 + 6
		}
	}
	return []byte(sb.String()), n
}
