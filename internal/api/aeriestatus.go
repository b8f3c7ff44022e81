package api

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/head"
	"github.com/aerie-db/aerie/internal/memory"
	"github.com/aerie-db/aerie/internal/tsdb"
)

// The storage engine's own status, which Prometheus' API has no place
// for (docs/ui.md): GET only, answers bounded by limit parameters, each
// list with its total, errors in the API's JSON shape.
const (
	StorageStatusPath = Prefix + "/status/aerie/storage"
	SeriesStatusPath  = Prefix + "/status/aerie/series"
)

// Limits of the status answers: the default and the greatest limit.
const (
	defaultStatusLimit, maxStatusLimit = 100, 10000
	defaultSeriesLimit, maxSeriesLimit = 20, 1000
	maxGroupMembers, maxSeriesBlocks   = 100, 100
)

type statusHandler struct {
	db      *tsdb.DB
	storage bool // /storage, else /series
}

func (h statusHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		exportError(w, http.StatusMethodNotAllowed, "bad_data", r.URL.Path+" answers GET only")
		return
	}
	var data any
	var err error
	status := http.StatusBadRequest
	if h.storage {
		var limit int
		if limit, err = parseLimit(r.URL.Query().Get("limit"), defaultStatusLimit, maxStatusLimit); err == nil {
			data, err = storageStatus(h.db, limit)
			status = http.StatusInternalServerError
		}
	} else {
		data, status, err = seriesStatus(r, h.db)
	}
	if err != nil {
		typ := "bad_data"
		if status >= 500 {
			typ = "internal"
		}
		exportError(w, status, typ, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(struct {
		Status string `json:"status"`
		Data   any    `json:"data"`
	}{"success", data})
}

func parseLimit(s string, def, most int) (int, error) {
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > most {
		return 0, fmt.Errorf("limit %q: want a whole number from 1 to %d", s, most)
	}
	return n, nil
}

// StorageStatus is the answer of /status/aerie/storage.
type StorageStatus struct {
	Head        HeadStatus     `json:"head"`
	Flush       FlushStatus    `json:"flush"`
	Memory      MemoryStatus   `json:"memory"`
	Blocks      BlocksStatus   `json:"blocks"`
	WAL         WALStatus      `json:"wal"`
	Bucket      BucketStatus   `json:"bucket"`
	Quarantined ListOf[string] `json:"quarantined"`
}

// ListOf is a list cut at the request's limit, with the length it had.
type ListOf[T any] struct {
	Total int `json:"total"`
	List  []T `json:"list"`
}

type HeadStatus struct {
	Series     int                 `json:"series"`
	Bytes      int64               `json:"bytes"`
	MinTime    int64               `json:"minTime"` // math.MaxInt64 when empty
	MaxTime    int64               `json:"maxTime"` // math.MinInt64 when empty
	Partitions []PartitionStatus   `json:"partitions"`
	Groups     ListOf[GroupStatus] `json:"groups"`
}

// PartitionStatus is one head partition: its bounds, the times of its
// samples, whether it is flushed (then it is hot: in memory until the
// memory manager reclaims it) and its area in the memory manager.
type PartitionStatus struct {
	ID            int64  `json:"id"`
	Start         int64  `json:"start"` // inclusive
	End           int64  `json:"end"`   // exclusive
	MinSampleTime *int64 `json:"minSampleTime,omitempty"`
	MaxSampleTime *int64 `json:"maxSampleTime,omitempty"`
	Flushed       bool   `json:"flushed"`
	Area          string `json:"area,omitempty"`
	MemoryBlocks  int    `json:"memoryBlocks"`
}

type GroupStatus struct {
	ID         uint64 `json:"id"`
	Key        string `json:"key"`
	Series     int    `json:"series"`
	Partitions int    `json:"partitions"`
	Rows       int    `json:"rows"`
}

type FlushStatus struct {
	Running     bool  `json:"running"`
	GroupsDone  int64 `json:"groupsDone"`
	GroupsTotal int64 `json:"groupsTotal"`
	Flushes     int64 `json:"flushes"`
}

type MemoryStatus struct {
	PageSize        int    `json:"pageSize"`
	BlockSize       int    `json:"blockSize"`
	LimitBytes      int64  `json:"limitBytes"`
	Bytes           int64  `json:"bytes"`
	InUseBytes      int64  `json:"inUseBytes"`
	LiveBlocks      int    `json:"liveBlocks"`
	HotBlocks       int    `json:"hotBlocks"`
	CoolingBlocks   int    `json:"coolingBlocks"`
	FreeBlocks      int    `json:"freeBlocks"`
	Pressure        int    `json:"pressure"`
	ReclaimedBlocks uint64 `json:"reclaimedBlocks"`
	Epoch           uint64 `json:"epoch"`
	ActiveReaders   int    `json:"activeReaders"`
}

// BlocksStatus sums the blocks by compaction level and lists the newest.
type BlocksStatus struct {
	Bytes   int64               `json:"bytes"`
	Samples int64               `json:"samples"`
	ByLevel []LevelStatus       `json:"byLevel"`
	Blocks  ListOf[BlockStatus] `json:"blocks"`
}

type LevelStatus struct {
	Level          int     `json:"level"`
	Blocks         int     `json:"blocks"`
	Bytes          int64   `json:"bytes"`
	Samples        int64   `json:"samples"`
	BytesPerSample float64 `json:"bytesPerSample"`
}

// BlockStatus is a block's meta.json, flattened (see `aerie inspect`).
type BlockStatus struct {
	ULID           string   `json:"ulid"`
	MinTime        int64    `json:"minTime"`
	MaxTime        int64    `json:"maxTime"`
	Level          int      `json:"level"`
	Seq            uint64   `json:"seq"`
	Backfill       uint64   `json:"backfill"`
	Series         int      `json:"series"`
	Groups         int      `json:"groups"`
	Samples        int      `json:"samples"`
	Bytes          int64    `json:"bytes"`
	BytesPerSample float64  `json:"bytesPerSample"`
	Parents        []string `json:"parents"`
	Remote         bool     `json:"remote"` // read from the bucket tier
}

// BucketStatus is the remote tier: the open blocks read from the bucket,
// the moves to it, and how late the next one is (tsdb.RemoteStats).
type BucketStatus struct {
	Blocks         int   `json:"blocks"`
	MovedBlocks    int64 `json:"movedBlocks"`
	UploadFailures int64 `json:"uploadFailures"`
	UploadLag      int64 `json:"uploadLag"` // ms of data time; 0: none due
	PendingDeletes int   `json:"pendingDeletes"`
}

type WALStatus struct {
	FirstSegment int   `json:"firstSegment"`
	LastSegment  int   `json:"lastSegment"`
	Files        int   `json:"files"`
	Bytes        int64 `json:"bytes"`
}

func blockStatus(m block.Meta, remote map[string]bool) BlockStatus {
	return BlockStatus{Remote: remote[m.ULID],
		ULID: m.ULID, MinTime: m.MinTime, MaxTime: m.MaxTime, Level: m.Compaction.Level, Seq: m.Seq, Backfill: m.Backfill,
		Series: m.Stats.Series, Groups: m.Stats.Groups, Samples: m.Stats.Samples,
		Bytes: m.Stats.Bytes(), BytesPerSample: m.Stats.BytesPerSample(), Parents: nonNil(m.Compaction.Parents),
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func storageStatus(db *tsdb.DB, limit int) (*StorageStatus, error) {
	h := db.Head()
	st := &StorageStatus{}
	st.Head = HeadStatus{Series: h.NumSeries(), Bytes: h.Bytes(), MinTime: h.MinTime(), MaxTime: h.MaxTime()}

	ms := h.Memory().Stats()
	areas := map[int64]memory.PartitionStats{}
	for _, p := range ms.Partitions {
		areas[p.ID] = p
	}
	flushed := h.FlushedPartitions()
	pids := append(slices.Clone(flushed), h.Partitions()...)
	slices.Sort(pids)
	pids = slices.Compact(pids)
	st.Head.Partitions = []PartitionStatus{}
	for _, pid := range pids {
		ps := PartitionStatus{ID: pid, Flushed: slices.Contains(flushed, pid)}
		ps.Start, ps.End = h.PartitionBounds(pid)
		if mint, maxt, ok := h.PartitionTimeRange(pid); ok {
			ps.MinSampleTime, ps.MaxSampleTime = &mint, &maxt
		}
		if a, ok := areas[pid]; ok {
			ps.Area, ps.MemoryBlocks = a.Area.String(), a.Blocks
		}
		st.Head.Partitions = append(st.Head.Partitions, ps)
	}
	gs, total := h.Groups(limit)
	st.Head.Groups = ListOf[GroupStatus]{Total: total, List: make([]GroupStatus, 0, len(gs))}
	for _, g := range gs {
		st.Head.Groups.List = append(st.Head.Groups.List, groupStatus(g))
	}

	done, all := db.FlushProgress()
	st.Flush = FlushStatus{Running: all > 0, GroupsDone: done, GroupsTotal: all, Flushes: db.Stats().Flushes}
	st.Memory = MemoryStatus{
		PageSize: ms.PageSize, BlockSize: ms.BlockSize, LimitBytes: ms.LimitBytes, Bytes: ms.Bytes, InUseBytes: ms.InUseBytes,
		LiveBlocks: ms.LiveBlocks, HotBlocks: ms.HotBlocks, CoolingBlocks: ms.CoolingBlocks, FreeBlocks: ms.FreeBlocks,
		Pressure: ms.Pressure, ReclaimedBlocks: ms.ReclaimedBlocks, Epoch: ms.Epoch, ActiveReaders: ms.ActiveReaders,
	}

	metas := db.Blocks()
	st.Blocks.ByLevel = []LevelStatus{}
	levels := map[int]*LevelStatus{}
	for _, m := range metas {
		l := levels[m.Compaction.Level]
		if l == nil {
			l = &LevelStatus{Level: m.Compaction.Level}
			levels[m.Compaction.Level] = l
		}
		l.Blocks++
		l.Bytes += m.Stats.Bytes()
		l.Samples += int64(m.Stats.Samples)
		st.Blocks.Bytes += m.Stats.Bytes()
		st.Blocks.Samples += int64(m.Stats.Samples)
	}
	for _, l := range levels {
		l.BytesPerSample = float64(l.Bytes) / float64(max(1, l.Samples))
		st.Blocks.ByLevel = append(st.Blocks.ByLevel, *l)
	}
	slices.SortFunc(st.Blocks.ByLevel, func(a, b LevelStatus) int { return a.Level - b.Level })
	// The newest first: by end time, then ULID (time-ordered).
	slices.SortStableFunc(metas, func(a, b block.Meta) int {
		if a.MaxTime != b.MaxTime {
			if a.MaxTime > b.MaxTime {
				return -1
			}
			return 1
		}
		switch {
		case a.ULID > b.ULID:
			return -1
		case a.ULID < b.ULID:
			return 1
		}
		return 0
	})
	st.Blocks.Blocks = ListOf[BlockStatus]{Total: len(metas), List: []BlockStatus{}}
	remote := db.RemoteBlocks()
	for _, m := range metas[:min(limit, len(metas))] {
		st.Blocks.Blocks.List = append(st.Blocks.Blocks.List, blockStatus(m, remote))
	}
	rs := db.RemoteStats()
	st.Bucket = BucketStatus{Blocks: rs.Blocks, MovedBlocks: rs.ShippedBlocks, UploadFailures: rs.ShipFailures, UploadLag: rs.UploadLag, PendingDeletes: rs.PendingDeletes}

	w, err := db.WAL()
	if err != nil {
		return nil, fmt.Errorf("WAL: %w", err)
	}
	st.WAL = WALStatus{FirstSegment: w.FirstSegment, LastSegment: w.LastSegment, Files: w.Files, Bytes: w.Bytes}
	q, err := db.QuarantinedBlocks()
	if err != nil {
		return nil, fmt.Errorf("quarantined blocks: %w", err)
	}
	st.Quarantined = ListOf[string]{Total: len(q), List: nonNil(q[:min(limit, len(q))])}
	return st, nil
}

func groupStatus(g head.GroupInfo) GroupStatus {
	return GroupStatus{ID: uint64(g.ID), Key: g.Key, Series: g.Series, Partitions: g.Partitions, Rows: g.Rows}
}

// SeriesStatus is one series of /status/aerie/series: its labels, the
// head groups it has slots in (empty if the head does not hold it; the
// last is the one it writes to) with their series, and the blocks that
// hold it.
type SeriesStatus struct {
	Labels labels.Labels       `json:"labels"`
	Groups []SeriesGroup       `json:"groups"`
	Blocks ListOf[BlockStatus] `json:"blocks"`
}

type SeriesGroup struct {
	GroupStatus
	Members []labels.Labels `json:"members"` // the group's first series, in slot order, up to 100
}

func seriesStatus(r *http.Request, db *tsdb.DB) (any, int, error) {
	if err := r.ParseForm(); err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("parse form: %w", err)
	}
	limit, err := parseLimit(r.Form.Get("limit"), defaultSeriesLimit, maxSeriesLimit)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	if len(r.Form["match[]"]) == 0 {
		return nil, http.StatusBadRequest, fmt.Errorf("no match[] parameter: give at least one series selector, e.g. match[]=up")
	}
	var sets [][]*labels.Matcher
	for _, m := range r.Form["match[]"] {
		ms, err := parser.ParseMetricSelector(m)
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("match[] %q: %w", m, err)
		}
		sets = append(sets, ms)
	}
	mint, err := ParseTimeParam(r.Form.Get("start"), math.MinInt64)
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("start: %w", err)
	}
	maxt, err := ParseTimeParam(r.Form.Get("end"), math.MaxInt64)
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("end: %w", err)
	}
	if mint > maxt {
		return nil, http.StatusBadRequest, fmt.Errorf("end is before start")
	}
	q, err := db.Querier(mint, maxt)
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	defer q.Close()
	hints := &storage.SelectHints{Start: mint, End: maxt, Func: "series"}
	ss := make([]storage.SeriesSet, 0, len(sets))
	for _, ms := range sets {
		ss = append(ss, q.Select(r.Context(), true, hints, ms...))
	}
	set := storage.NewMergeSeriesSet(ss, 0, storage.ChainedSeriesMerge)
	out := ListOf[SeriesStatus]{List: []SeriesStatus{}}
	remote := db.RemoteBlocks()
	for set.Next() {
		out.Total++
		if len(out.List) == limit {
			continue
		}
		lset := set.At().Labels()
		s := SeriesStatus{Labels: lset}
		s.Groups = []SeriesGroup{}
		for _, g := range db.Head().SeriesGroups(lset, maxGroupMembers) {
			s.Groups = append(s.Groups, SeriesGroup{GroupStatus: groupStatus(g.GroupInfo), Members: g.Members})
		}
		bs, total := db.SeriesBlocks(lset, maxSeriesBlocks)
		s.Blocks = ListOf[BlockStatus]{Total: total, List: make([]BlockStatus, 0, len(bs))}
		for _, b := range bs {
			s.Blocks.List = append(s.Blocks.List, blockStatus(b, remote))
		}
		out.List = append(out.List, s)
	}
	if err := set.Err(); err != nil {
		return nil, http.StatusInternalServerError, err
	}
	return out, 0, nil
}
