package pgarchive_test

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/pgarchive"
)

// levelSource is a Source with one level and one series holding a point
// every minute up to now.
type levelSource struct{}

var oneMinute = pgarchive.Level{Name: "1m", Step: time.Minute, Retention: 7 * 24 * time.Hour}

func (levelSource) Levels() []pgarchive.Level { return []pgarchive.Level{oneMinute} }

func (levelSource) Ready(pgarchive.Level) int64 {
	return time.Now().Truncate(time.Minute).UnixMilli()
}

func (levelSource) Read(ctx context.Context, l pgarchive.Level, from, to int64, fn func(labels.Labels, []int64, []float64) error) error {
	var ts []int64
	var vs []float64
	for t := (from + 59999) / 60000 * 60000; t < to; t += 60000 {
		ts, vs = append(ts, t), append(vs, float64(t/60000%60))
	}
	return fn(labels.FromStrings(labels.MetricName, "servers.web1.minute"), ts, vs)
}

// Archive a Source's levels into PostgreSQL; then
//
//	SELECT t, r FROM tv JOIN ds ON ds.id = tv.ds_id
//	 WHERE ds.labels @> '{"__name__": "servers.web1.minute"}' ORDER BY t;
//
// returns the last week of minutes.
func Example() {
	a, err := pgarchive.New(pgarchive.Config{
		DSN:                 "host=127.0.0.1 dbname=aerie_archive sslmode=disable",
		MaxFlushesPerSecond: 100,
	}, levelSource{}, slog.Default(), prometheus.NewRegistry())
	if err != nil {
		slog.Error("pgarchive", "err", err)
		return
	}
	if err := a.Start(); err != nil { // returns at once, even with PostgreSQL down
		slog.Error("pgarchive", "err", err)
		return
	}
	defer a.Close()
}
