package graphite

import (
	"context"
	"strings"

	"github.com/aerie-db/aerie/internal/graphite/expr"
)

// evalTarget parses and evaluates one target; an empty one yields
// nothing (graphite-web skips it too).
func evalTarget(ctx context.Context, target string, from, until, now int64, f expr.Fetcher, opts expr.Options) ([]*expr.Series, error) {
	if strings.TrimSpace(target) == "" {
		return nil, nil
	}
	e, err := expr.Parse(target)
	if err != nil {
		return nil, err
	}
	return expr.EvalOptions(ctx, e, from, until, now, f, opts)
}
