package pgarchive

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/prometheus/model/labels"
)

// staleError: the database's watermark is not the one a job starts from
// (another archiver wrote the level, or the database was restored).
type staleError struct {
	level      string
	want, have int64
}

func (e *staleError) Error() string {
	return fmt.Sprintf("watermark of level %s is %d in the database, the job starts at %d", e.level, e.have, e.want)
}

// ensureSchema creates the schema once per archiver.
func (a *Archiver) ensureSchema(ctx context.Context) error {
	a.schemaMu.Lock()
	defer a.schemaMu.Unlock()
	if a.schemaDone {
		return nil
	}
	if err := createSchema(ctx, a.pool); err != nil {
		return err
	}
	a.schemaDone = true
	return nil
}

// bundle returns the shared state of bundle id, raising its newest slot to
// the database's.
func (a *Archiver) bundle(id int32, lay Layout, latestMs *int64) *bundleState {
	a.bundlesMu.Lock()
	b, ok := a.bundles[id]
	if !ok {
		b = &bundleState{id: id, lay: lay}
		b.latestSlot.Store(math.MinInt64)
		a.bundles[id] = b
	}
	a.bundlesMu.Unlock()
	if latestMs != nil {
		b.raiseLatest(lay.Slot(*latestMs))
	}
	return b
}

// initLevel loads lv's bundle, watermark and series positions.
func (a *Archiver) initLevel(ctx context.Context, lv *levelState) error {
	if err := a.ensureSchema(ctx); err != nil {
		return err
	}
	gen := lv.gen.Load()
	var (
		id       int32
		width    int32
		latestMs *int64
		done     int64
		pos      = map[string]int32{}
	)
	err := pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `
INSERT INTO rra_bundle (step_ms, size, width) VALUES ($1, $2, $3)
ON CONFLICT (step_ms, size) DO UPDATE SET step_ms = EXCLUDED.step_ms
RETURNING id, width, latest_ms`, lv.lay.StepMs, lv.lay.Size, lv.lay.Width).Scan(&id, &width, &latestMs)
		if err != nil {
			return fmt.Errorf("create bundle: %w", err)
		}
		_, err = tx.Exec(ctx, `
INSERT INTO aerie_archive_progress (level, rra_bundle_id, done_ms) VALUES ($1, $2, 0)
ON CONFLICT DO NOTHING`, lv.level.Name, id)
		if err != nil {
			return fmt.Errorf("create watermark: %w", err)
		}
		err = tx.QueryRow(ctx, `SELECT done_ms FROM aerie_archive_progress WHERE level = $1 AND rra_bundle_id = $2`,
			lv.level.Name, id).Scan(&done)
		if err != nil {
			return fmt.Errorf("read watermark: %w", err)
		}
		rs, err := tx.Query(ctx, `
SELECT ds.labels::text, rra.pos FROM rra JOIN ds ON ds.id = rra.ds_id
WHERE rra.rra_bundle_id = $1 AND rra.level = $2`, id, lv.level.Name)
		if err != nil {
			return fmt.Errorf("load series: %w", err)
		}
		var (
			js  string
			p   int32
			key []byte
		)
		_, err = pgx.ForEachRow(rs, []any{&js, &p}, func() error {
			var m map[string]string
			if err := json.Unmarshal([]byte(js), &m); err != nil {
				return fmt.Errorf("labels %s of position %d: %w", js, p, err)
			}
			key = labels.FromMap(m).Bytes(key[:0])
			pos[string(key)] = p
			return nil
		})
		if err != nil {
			return fmt.Errorf("load series: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load state of level %s: %w", lv.level.Name, err)
	}
	lay := lv.lay
	if width != lay.Width {
		a.log.Info("pgarchive: bundle keeps the segment width it was created with", "level", lv.level.Name, "width", width, "configured", lay.Width)
		lay.Width = width
	}
	lv.bundle = a.bundle(id, lay, latestMs)
	lv.next = done
	lv.pos = pos
	lv.done.Store(done)
	lv.initGen = gen
	lv.inited = true
	return nil
}

// resolve gives positions to lv.pending's series: their ds rows and rra
// rows, created under the bundle's row lock so positions are handed out
// once.
func (a *Archiver) resolve(ctx context.Context, lv *levelState) error {
	b := lv.bundle
	// Sorted by name, so that two loops registering the same series lock
	// their ds rows in the same order.
	byName := make(map[string]string, len(lv.pending)) // name → labels JSON
	for _, p := range lv.pending {
		byName[p.lset] = string(p.json)
	}
	names := slices.Sorted(maps.Keys(byName))
	jsons := make([]string, len(names))
	for k, name := range names {
		jsons[k] = byName[name]
	}
	got := make(map[string]int32, len(names)) // name → position
	err := pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		var last int64
		if err := tx.QueryRow(ctx, `SELECT last_pos FROM rra_bundle WHERE id = $1 FOR UPDATE`, b.id).Scan(&last); err != nil {
			return fmt.Errorf("lock bundle %d: %w", b.id, err)
		}
		rs, err := tx.Query(ctx, `
INSERT INTO ds (name, labels) SELECT u.name, u.labels::jsonb FROM unnest($1::text[], $2::text[]) AS u(name, labels)
ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name
RETURNING id, name`, names, jsons)
		if err != nil {
			return fmt.Errorf("insert ds: %w", err)
		}
		ids := make(map[int64]string, len(names))
		nameIDs := make(map[string]int64, len(names))
		var (
			id   int64
			name string
		)
		if _, err := pgx.ForEachRow(rs, []any{&id, &name}, func() error { ids[id], nameIDs[name] = name, id; return nil }); err != nil {
			return fmt.Errorf("insert ds: %w", err)
		}
		// New positions go to the series in name order.
		idList := make([]int64, 0, len(names))
		for _, name := range names {
			id, ok := nameIDs[name]
			if !ok {
				return fmt.Errorf("insert ds: no id returned for %s", name)
			}
			idList = append(idList, id)
		}
		rs, err = tx.Query(ctx, `SELECT ds_id, pos FROM rra WHERE rra_bundle_id = $1 AND level = $2 AND ds_id = ANY($3)`,
			b.id, lv.level.Name, idList)
		if err != nil {
			return fmt.Errorf("look up rra: %w", err)
		}
		var p int32
		if _, err := pgx.ForEachRow(rs, []any{&id, &p}, func() error { got[ids[id]] = p; return nil }); err != nil {
			return fmt.Errorf("look up rra: %w", err)
		}
		var newIDs []int64
		var newPos, newSeg, newIdx []int32
		for _, id := range idList {
			if _, ok := got[ids[id]]; ok {
				continue
			}
			if last >= math.MaxInt32 {
				return fmt.Errorf("bundle %d has no free position left", b.id)
			}
			p := int32(last)
			last++
			seg, idx := b.lay.Segment(p)
			newIDs, newPos, newSeg, newIdx = append(newIDs, id), append(newPos, p), append(newSeg, seg), append(newIdx, idx)
			got[ids[id]] = p
		}
		if len(newIDs) == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, `
INSERT INTO rra (ds_id, rra_bundle_id, level, pos, seg, idx)
SELECT u.ds_id, $1, $2, u.pos, u.seg, u.idx FROM unnest($3::bigint[], $4::int[], $5::int[], $6::int[]) AS u(ds_id, pos, seg, idx)`,
			b.id, lv.level.Name, newIDs, newPos, newSeg, newIdx)
		if err != nil {
			return fmt.Errorf("insert rra: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE rra_bundle SET last_pos = $2 WHERE id = $1`, b.id, last); err != nil {
			return fmt.Errorf("update bundle %d: %w", b.id, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range lv.pending {
		lv.pos[p.key] = got[p.lset]
	}
	return nil
}

// flush writes j in one transaction: its rows in batches of BatchRows (one
// flush each, under the rate limit), then the watermark and the bundle's
// newest slot with the last batch.
func (a *Archiver) flush(ctx context.Context, j *job) error {
	lv, b := j.level, j.bundle
	tx, err := a.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // after Commit it is a no-op
	var done int64
	err = tx.QueryRow(ctx, `SELECT done_ms FROM aerie_archive_progress WHERE level = $1 AND rra_bundle_id = $2 FOR UPDATE`,
		lv.level.Name, b.id).Scan(&done)
	if err != nil {
		return fmt.Errorf("lock watermark: %w", err)
	}
	if done != j.from {
		return &staleError{level: lv.level.Name, want: j.from, have: done}
	}
	r := &j.rows
	n := r.Len()
	for lo := 0; lo < n || lo == 0; lo += a.cfg.BatchRows {
		hi := min(n, lo+a.cfg.BatchRows)
		batch := &pgx.Batch{}
		for k := lo; k < hi; k++ {
			c0, c1 := r.Lo[k], r.Lo[k+1]
			batch.Queue(upsertRowSQL, b.id, r.Seg[k], r.I[k], r.Idx[c0:c1], r.Dp[c0:c1], r.Ver[c0:c1], b.lay.Width)
		}
		if hi == n {
			batch.Queue(`UPDATE aerie_archive_progress SET done_ms = $3 WHERE level = $1 AND rra_bundle_id = $2`,
				lv.level.Name, b.id, j.to)
			batch.Queue(`UPDATE rra_bundle SET latest_ms = greatest(latest_ms, $2) WHERE id = $1`,
				b.id, j.latestSlot*b.lay.StepMs)
		}
		if err := a.waitFlush(ctx); err != nil {
			return err
		}
		a.m.flushes.Inc()
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return fmt.Errorf("write rows %d..%d of %d: %w", lo, hi, n, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	a.m.pointsWritten.Add(float64(j.points))
	a.m.rowsWritten.Add(float64(n))
	lv.done.Store(j.to)
	return nil
}
