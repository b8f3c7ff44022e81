package pgarchive

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	dropped       *prometheus.CounterVec
	flushes       prometheus.Counter
	flushErrors   prometheus.Counter
	levelErrors   *prometheus.CounterVec
	pointsWritten prometheus.Counter
	rowsWritten   prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, a *Archiver) (*metrics, error) {
	m := &metrics{
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aerie_pgarchive_dropped_points_total",
			Help: "Points the PostgreSQL archive could not place, by reason (too_old, out_of_range, same_slot).",
		}, []string{"reason"}),
		flushes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "aerie_pgarchive_flushes_total",
			Help: "Batches of ts row updates sent to PostgreSQL.",
		}),
		flushErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "aerie_pgarchive_flush_errors_total",
			Help: "Failed attempts to write a job (a level's range) to PostgreSQL; the job is retried.",
		}),
		levelErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "aerie_pgarchive_level_errors_total",
			Help: "Failed attempts of a level loop to prepare a job (read the source, load state or register series); retried.",
		}, []string{"level"}),
		pointsWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "aerie_pgarchive_points_written_total",
			Help: "Points committed to PostgreSQL.",
		}),
		rowsWritten: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "aerie_pgarchive_rows_written_total",
			Help: "ts row updates committed to PostgreSQL.",
		}),
	}
	cs := []prometheus.Collector{m.dropped, m.flushes, m.flushErrors, m.levelErrors, m.pointsWritten, m.rowsWritten,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "aerie_pgarchive_queue_length",
			Help: "ts row updates queued or being written (jobs without rows count one).",
		}, func() float64 { return float64(a.queue.len()) }),
	}
	for _, lv := range a.levels {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "aerie_pgarchive_lag_seconds",
			Help:        "How far the archive is behind what the level holds, counting only the round-robin window.",
			ConstLabels: prometheus.Labels{"level": lv.level.Name},
		}, func() float64 { return float64(a.lagMs(lv)) / 1000 }))
	}
	if reg != nil {
		for _, c := range cs {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("pgarchive: register metrics: %w", err)
			}
		}
	}
	return m, nil
}

// lagMs is the part of the level's window (ending at Ready) that is not
// committed yet.
func (a *Archiver) lagMs(lv *levelState) int64 {
	ready := a.src.Ready(lv.level)
	if ready <= 0 {
		return 0
	}
	lay := lv.lay
	start := satMul(lay.Slot(ready-1)-lay.Size+1, lay.StepMs)
	return max(0, ready-max(lv.done.Load(), start))
}
