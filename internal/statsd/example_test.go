package statsd_test

import (
	"fmt"

	"github.com/aerie-db/aerie/internal/statsd"
)

func ExampleParser_ParsePacket() {
	p := statsd.NewParser(statsd.Limits{}, false)
	pkt := []byte("gorets:1|c|@0.1\ngaugor:-10|g\nglork:320|ms|#env:prod\nbad line\nuniques:765|s")
	p.ParsePacket(pkt, func(m *statsd.Metric) {
		fmt.Printf("%s %v value=%v delta=%v member=%q rate=%v tags=%d\n", m.Name, m.Type, m.Value, m.Delta, m.Member, m.Rate, len(m.Tags))
	}, func(err *statsd.ParseError) {
		fmt.Println(err)
	})
	// Output:
	// gorets counter value=1 delta=false member="" rate=0.1 tags=0
	// gaugor gauge value=-10 delta=true member="" rate=1 tags=0
	// glork timer value=320 delta=false member="" rate=1 tags=1
	// statsd line 4, byte 60, metric "bad line": no ':' after the metric name
	// uniques set value=0 delta=false member="765" rate=1 tags=0
}
