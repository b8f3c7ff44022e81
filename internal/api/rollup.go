package api

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/util/annotations"
)

// rollupKey carries the rollup level a request asked for.
type rollupKey struct{}

// withRollup reads the `rollup` parameter (query string or form) and
// passes the level on in the request's context; an unknown level is a 400
// in the API's error shape.
func withRollup(h http.Handler, levels func(string) (storage.Queryable, bool), names []string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("rollup")
		if name == "" && r.Method == http.MethodPost && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
			if err := r.ParseForm(); err == nil {
				name = r.PostForm.Get("rollup")
			}
		}
		if name == "" || name == "raw" {
			h.ServeHTTP(w, r)
			return
		}
		if _, ok := levels(name); !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"status":"error","errorType":"bad_data","error":%q}`,
				fmt.Sprintf("invalid parameter \"rollup\": no rollup level %q (levels: raw %s)", name, strings.Join(names, " ")))
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), rollupKey{}, name)))
	})
}

// levelQuerier opens, at its first call, the querier of the level the
// call's context names (the raw DB's without one). Prometheus' API and
// engine pass the request's context down to Select and the label calls.
type levelQuerier struct {
	s          *Storage
	mint, maxt int64

	mu  sync.Mutex // guards q and err
	q   storage.Querier
	err error
}

func (l *levelQuerier) get(ctx context.Context) (storage.Querier, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.q != nil || l.err != nil {
		return l.q, l.err
	}
	name, _ := ctx.Value(rollupKey{}).(string)
	if name == "" {
		l.q, l.err = l.s.DB.Querier(l.mint, l.maxt)
		return l.q, l.err
	}
	qa, ok := l.s.Rollups(name)
	if !ok {
		l.err = fmt.Errorf("no rollup level %q", name)
		return nil, l.err
	}
	l.q, l.err = qa.Querier(l.mint, l.maxt)
	return l.q, l.err
}

func (l *levelQuerier) Select(ctx context.Context, sortSeries bool, hints *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
	q, err := l.get(ctx)
	if err != nil {
		return storage.ErrSeriesSet(err)
	}
	return q.Select(ctx, sortSeries, hints, ms...)
}

func (l *levelQuerier) LabelValues(ctx context.Context, name string, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	q, err := l.get(ctx)
	if err != nil {
		return nil, nil, err
	}
	return q.LabelValues(ctx, name, hints, ms...)
}

func (l *levelQuerier) LabelNames(ctx context.Context, hints *storage.LabelHints, ms ...*labels.Matcher) ([]string, annotations.Annotations, error) {
	q, err := l.get(ctx)
	if err != nil {
		return nil, nil, err
	}
	return q.LabelNames(ctx, hints, ms...)
}

func (l *levelQuerier) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.q != nil {
		return l.q.Close()
	}
	return nil
}
