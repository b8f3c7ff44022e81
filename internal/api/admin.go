package api

import (
	"context"
	"errors"
	"math"
	"sort"

	"github.com/oklog/ulid/v2"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	promtsdb "github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/index"
	v1 "github.com/prometheus/prometheus/web/api/v1"

	"github.com/aerie-db/aerie/internal/tsdb"
)

// Errors of the admin endpoints Aerie does not support yet.
var (
	ErrSnapshotNotSupported = errors.New("snapshots are not supported by Aerie")
)

// AdminStats implements Prometheus' v1.TSDBAdminStats for an Aerie DB:
// /status/tsdb, /status/tsdb/blocks, /status/walreplay and admin/tsdb/*.
type AdminStats struct {
	db *tsdb.DB
}

var _ v1.TSDBAdminStats = (*AdminStats)(nil)

// NewAdminStats returns the admin and statistics view of db.
func NewAdminStats(db *tsdb.DB) *AdminStats { return &AdminStats{db: db} }

// CleanTombstones does nothing: Aerie's tombstones are applied at query
// time and have no separate clean-up step yet.
func (*AdminStats) CleanTombstones() error { return nil }

// Delete records tombstones for the matching series (tsdb.DB.Delete);
// every later query honours them.
func (a *AdminStats) Delete(ctx context.Context, mint, maxt int64, ms ...*labels.Matcher) error {
	return a.db.Delete(ctx, mint, maxt, ms...)
}

// Snapshot is not supported.
func (*AdminStats) Snapshot(string, bool) error { return ErrSnapshotNotSupported }

// WALReplayStatus reports the replay as done: the DB replays its WAL in
// Open, before the API exists.
func (*AdminStats) WALReplayStatus() (promtsdb.WALReplayStatus, error) {
	return promtsdb.WALReplayStatus{}, nil
}

// BlockMetas describes Aerie's blocks as Prometheus block metas.
func (a *AdminStats) BlockMetas() ([]promtsdb.BlockMeta, error) {
	bs := a.db.Blocks()
	out := make([]promtsdb.BlockMeta, 0, len(bs))
	for _, b := range bs {
		id, err := ulid.Parse(b.ULID)
		if err != nil {
			return nil, err
		}
		out = append(out, promtsdb.BlockMeta{
			ULID:    id,
			MinTime: b.MinTime,
			MaxTime: b.MaxTime,
			Stats: promtsdb.BlockStats{
				NumSamples:      uint64(b.Stats.Samples),
				NumFloatSamples: uint64(b.Stats.Samples),
				NumSeries:       uint64(b.Stats.Series),
			},
			Compaction: promtsdb.BlockMetaCompaction{Level: 1, Sources: []ulid.ULID{id}},
			Version:    b.Version,
		})
	}
	return out, nil
}

// Stats returns the head statistics Prometheus' Head.Stats returns: the
// series count, time range, and the cardinality of the head's series
// (those with a sample in the head's time range), by metric name
// (statsByLabelName's values), by label name (values and memory) and by
// label pair, each the top limit entries. Ties are ordered by name.
func (a *AdminStats) Stats(statsByLabelName string, limit int) (*promtsdb.Stats, error) {
	h := a.db.Head()
	st := &promtsdb.Stats{
		NumSeries: uint64(h.NumSeries()),
		MinTime:   h.MinTime(),
		MaxTime:   h.MaxTime(),
	}
	ps, err := a.postingsStats(st.MinTime, st.MaxTime, statsByLabelName, limit)
	if err != nil {
		return nil, err
	}
	st.IndexPostingStats = ps
	return st, nil
}

func (a *AdminStats) postingsStats(mint, maxt int64, statsByLabelName string, limit int) (*index.PostingsStats, error) {
	// Series per label name and value.
	pairs := map[string]map[string]uint64{}
	if maxt != math.MinInt64 && mint <= maxt {
		q, err := a.db.Querier(mint, maxt)
		if err != nil {
			return nil, err
		}
		defer q.Close()
		all := labels.MustNewMatcher(labels.MatchRegexp, labels.MetricName, ".+")
		ss := q.Select(context.Background(), false, &storage.SelectHints{Start: mint, End: maxt, Func: "series"}, all)
		for ss.Next() {
			ss.At().Labels().Range(func(l labels.Label) {
				vs := pairs[l.Name]
				if vs == nil {
					vs = map[string]uint64{}
					pairs[l.Name] = vs
				}
				vs[l.Value]++
			})
		}
		if err := ss.Err(); err != nil {
			return nil, err
		}
	}

	var metrics, names, memory, lvPairs []index.Stat
	numPairs := 0
	for n, vs := range pairs {
		names = append(names, index.Stat{Name: n, Count: uint64(len(vs))})
		numPairs += len(vs)
		var size uint64
		for v, c := range vs {
			if n == statsByLabelName {
				metrics = append(metrics, index.Stat{Name: v, Count: c})
			}
			lvPairs = append(lvPairs, index.Stat{Name: n + "=" + v, Count: c})
			size += labels.SizeOfLabels(n, v, c)
		}
		memory = append(memory, index.Stat{Name: n, Count: size})
	}
	return &index.PostingsStats{
		CardinalityMetricsStats: top(metrics, limit),
		CardinalityLabelStats:   top(names, limit),
		LabelValueStats:         top(memory, limit),
		LabelValuePairsStats:    top(lvPairs, limit),
		NumLabelPairs:           numPairs,
	}, nil
}

// top returns the limit greatest counts, greatest first, ties by name.
func top(s []index.Stat, limit int) []index.Stat {
	sort.Slice(s, func(i, j int) bool {
		if s[i].Count != s[j].Count {
			return s[i].Count > s[j].Count
		}
		return s[i].Name < s[j].Name
	})
	if limit >= 0 && len(s) > limit {
		s = s[:limit]
	}
	if s == nil {
		s = []index.Stat{}
	}
	return s
}
