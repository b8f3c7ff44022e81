package queryparse_test

import (
	"testing"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/aerie-db/aerie/internal/queryparse"
)

// BenchmarkParseExpr parses TSBS cpu-max-all-1 (a selector of ten metric
// names) as Prometheus' parser does and through the cache (a copy of the
// cached parse).
//
//	go test -run XXX -bench ParseExpr ./internal/queryparse/
func BenchmarkParseExpr(b *testing.B) {
	const q = `max(max_over_time({__name__=~"cpu_(usage_user|usage_system|usage_idle|usage_nice|usage_iowait|usage_irq|usage_softirq|usage_steal|usage_guest|usage_guest_nice)",hostname="host_1"}[1h])) by (__name__)`
	b.Run("prometheus", func(b *testing.B) {
		for b.Loop() {
			if _, err := parser.ParseExpr(q); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		for b.Loop() {
			if _, err := queryparse.ParseExpr(q); err != nil {
				b.Fatal(err)
			}
		}
	})
}
