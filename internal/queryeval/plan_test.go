package queryeval

import (
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/require"
)

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		expr    string
		delayed bool
		want    string // the rewritten expression; "" = no rollup
	}{
		{expr: `avg by (hostname) (avg_over_time(cpu_usage_user[1h]))`,
			want: `avg by (hostname) ({__aerie_rollup__="0"})`},
		{expr: `sum(rate(x_total{a="b"}[5m]))`, want: `sum({__aerie_rollup__="0"})`},
		{expr: `max by (i) (max_over_time(x[5m])) - min by (i) ((min_over_time(x[5m])))`,
			want: `max by (i) ({__aerie_rollup__="0"}) - min by (i) (({__aerie_rollup__="1"}))`},
		{expr: `histogram_quantile(0.9, sum by (le) (rate(b[5m])))`,
			want: `histogram_quantile(0.9, sum by (le) ({__aerie_rollup__="0"}))`},
		// With delayed name removal, label functions may stand between.
		{expr: `max by (metric) (label_replace(max_over_time({__name__=~"a|b"}[1h]), "metric", "$1", "__name__", "(.+)"))`, delayed: true,
			want: `max by (metric) (label_replace({__aerie_rollup__="0"}, "metric", "$1", "__name__", "(.+)"))`},
		{expr: `max by (metric) (label_replace(max_over_time({__name__=~"a|b"}[1h]), "metric", "$1", "__name__", "(.+)"))`},
		// Grouped by __name__: names are dropped at once, or (delayed)
		// restored by the name compatibility's label_replace.
		{expr: `sum by (__name__) (rate(x[5m]))`, want: `sum by (__name__) ({__aerie_rollup__="0"})`},
		{expr: `max by (__name__) (label_replace(max_over_time({__name__=~"a|b"}[5m]), "__name__", "$1", "__name__", "(.+)"))`, delayed: true,
			want: `max by (__name__) ({__aerie_rollup__="0"})`},
		{expr: `avg by (__name__, h) ((label_replace(label_replace(avg_over_time(x[1h]), "a", "b", "", ""), "__name__", "$1", "__name__", "(.+)")))`, delayed: true,
			want: `avg by (__name__, h) ((label_replace(label_replace({__aerie_rollup__="0"}, "a", "b", "", ""), "__name__", "$1", "__name__", "(.+)")))`},
		// The restoring label_replace right over the rollup is the rollup
		// with its names kept, under an aggregation or as the answer.
		{expr: `max by (__name__) (label_replace((max_over_time({__name__=~"a|b"}[5m])), "__name__", "$1", "__name__", "(.+)"))`, delayed: true,
			want: `max by (__name__) ({__aerie_rollup__="0"})`},
		{expr: `label_replace(max_over_time({__name__=~"a|b"}[5m]), "__name__", "$1", "__name__", "(.+)")`, delayed: true,
			want: `{__aerie_rollup__="0"}`},
		{expr: `label_replace(max_over_time({__name__=~"a|b"}[5m]), "__name__", "$1", "__name__", "(.+)")`},
		{expr: `label_replace(max_over_time({__name__=~"a|b"}[5m]), "__name__", "$1", "__name__", "(.+)") > 1`, delayed: true},
		{expr: `label_replace(quantile_over_time(0.5, {__name__=~"a|b"}[5m]), "__name__", "$1", "__name__", "(.+)")`, delayed: true},
		// Not rollups: the series' labels reach the answer, or the
		// function or selector is not one a rollup evaluates.
		// The answer of the query itself.
		{expr: `rate(x[5m])`, want: `{__aerie_rollup__="0"}`},
		{expr: `(last_over_time(x[5m]))`, want: `({__aerie_rollup__="0"})`},
		// … or of arithmetic with a number that is the answer.
		{expr: `rate(x[5m]) * 2`, want: `{__aerie_rollup__="0"} * 2`},
		{expr: `(8 * (irate(x[5m]))) / 1024`, want: `(8 * ({__aerie_rollup__="0"})) / 1024`},
		{expr: `rate(x[5m]) > 2`},
		{expr: `rate(x[5m]) * rate(y[5m])`},
		{expr: `sum(rate(x[5m]) * 2)`},
		{expr: `rate(x[5m]) * 2 > 1`},
		{expr: `sum without (i) (rate(x[5m]))`},
		// … or, as the query's answer, over one metric name (the end of
		// the query drops it).
		{expr: `avg(avg_over_time(cpu_usage_user[1h])) by (__name__, hostname)`, delayed: true,
			want: `avg by (__name__, hostname) ({__aerie_rollup__="0"})`},
		{expr: `sum by (__name__) (rate(x[5m]))`, delayed: true, want: `sum by (__name__) ({__aerie_rollup__="0"})`},
		{expr: `avg(avg_over_time({__name__=~"a|b"}[1h])) by (__name__, hostname)`, delayed: true},
		{expr: `avg(avg_over_time(x[1h])) by (__name__, hostname) * 2`, delayed: true,
			want: `avg by (__name__, hostname) ({__aerie_rollup__="0"}) * 2`},
		{expr: `label_replace(avg(avg_over_time(x[1h])) by (__name__, h), "n", "$1", "__name__", "(.+)")`, delayed: true},
		{expr: `sum by (__name__) (label_replace(rate(x[5m]), "a", "b", "", ""))`, delayed: true},
		{expr: `max by (__name__) (label_replace(max_over_time(x[5m]), "__name__", "$1", "__name__", "(a.+)"))`, delayed: true},
		{expr: `max by (__name__) (label_replace(max_over_time(x[5m]), "n", "$1", "__name__", "(.+)"))`, delayed: true},
		{expr: `sum by (__type__) (rate(x[5m]))`},
		{expr: `topk(3, rate(x[5m]))`},
		{expr: `sum by (i) (rate(x[5m] offset 1m))`},
		{expr: `sum by (i) (rate(x[5m] @ 100))`},
		{expr: `sum by (i) (quantile_over_time(0.5, x[5m]))`},
		{expr: `sum by (i) (predict_linear(x[5m], 60))`},
		{expr: `sum by (i) (absent_over_time(x[5m]))`},
		{expr: `max_over_time(sum by (i) (rate(x[5m]))[30m:1m])`},
		{expr: `sum by (i) (rate(x[5m]) * 2)`},
		{expr: `sum by (i) (abs(rate(x[5m])))`},
	} {
		e, err := parser.ParseExpr(tc.expr)
		require.NoError(t, err)
		e, rs := plan(e, tc.delayed)
		if tc.want == "" {
			require.Empty(t, rs, tc.expr)
			continue
		}
		require.NotEmpty(t, rs, tc.expr)
		require.Equal(t, tc.want, e.String(), tc.expr)
	}
}
