package pgarchive

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SchemaVersion is the version of the tables below, kept in
// aerie_archive_meta. An archiver refuses a database of another version.
const SchemaVersion = 1

// DefaultSegmentWidth is Tgres's segment width: wider rows pass a page and
// are TOASTed.
const DefaultSegmentWidth = 200

// schemaSQL creates the tables, the array helper and the view; every
// statement is idempotent. docs/format/pgarchive.md quotes it.
const schemaSQL = `
CREATE TABLE IF NOT EXISTS aerie_archive_meta (
  schema_version INT NOT NULL
);
CREATE TABLE IF NOT EXISTS ds (
  id BIGSERIAL PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  labels JSONB NOT NULL,
  created TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS rra_bundle (
  id SERIAL PRIMARY KEY,
  step_ms BIGINT NOT NULL CHECK (step_ms > 0),
  size INT NOT NULL CHECK (size > 0),
  width INT NOT NULL CHECK (width > 0),
  last_pos INT NOT NULL DEFAULT 0,
  latest_ms BIGINT,
  UNIQUE (step_ms, size)
);
CREATE TABLE IF NOT EXISTS rra (
  id BIGSERIAL PRIMARY KEY,
  ds_id BIGINT NOT NULL REFERENCES ds (id),
  rra_bundle_id INT NOT NULL REFERENCES rra_bundle (id),
  level TEXT NOT NULL,
  pos INT NOT NULL,
  seg INT NOT NULL,
  idx INT NOT NULL,
  UNIQUE (rra_bundle_id, level, ds_id),
  UNIQUE (rra_bundle_id, pos)
);
CREATE INDEX IF NOT EXISTS rra_ds_id ON rra (ds_id);
CREATE TABLE IF NOT EXISTS ts (
  rra_bundle_id INT NOT NULL,
  seg INT NOT NULL,
  i INT NOT NULL,
  dp DOUBLE PRECISION[] NOT NULL,
  ver INT[] NOT NULL,
  PRIMARY KEY (rra_bundle_id, seg, i)
);
CREATE TABLE IF NOT EXISTS aerie_archive_progress (
  level TEXT NOT NULL,
  rra_bundle_id INT NOT NULL REFERENCES rra_bundle (id),
  done_ms BIGINT NOT NULL,
  PRIMARY KEY (level, rra_bundle_id)
);
CREATE OR REPLACE FUNCTION aerie_array_put(a anyarray, idx INT[], v anyarray)
RETURNS anyarray LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  FOR k IN 1 .. coalesce(array_length(idx, 1), 0) LOOP
    a[idx[k]] := v[k];
  END LOOP;
  RETURN a;
END
$$;
CREATE OR REPLACE VIEW tv AS
SELECT rra.ds_id, rra.id AS rra_id, rra.level, b.step_ms,
       timestamptz 'epoch' + interval '1 millisecond' *
         (((c.lap - (ts.i > c.slot)::int) * b.size + ts.i) * b.step_ms) AS t,
       ts.dp[rra.idx] AS r
  FROM rra
  JOIN rra_bundle b ON b.id = rra.rra_bundle_id
  CROSS JOIN LATERAL (SELECT b.latest_ms / b.step_ms / b.size AS lap,
                             b.latest_ms / b.step_ms % b.size AS slot) c
  JOIN ts ON ts.rra_bundle_id = b.id AND ts.seg = rra.seg
 WHERE ts.ver[rra.idx] = ((c.lap - (ts.i > c.slot)::int) % 2147483648)::int;
`

// upsertRowSQL writes the cells of one ts row, creating the row (arrays of
// width NULLs) when it does not exist.
const upsertRowSQL = `
INSERT INTO ts AS t (rra_bundle_id, seg, i, dp, ver)
VALUES ($1, $2, $3,
  aerie_array_put(array_fill(NULL::float8, ARRAY[$7::int]), $4::int[], $5::float8[]),
  aerie_array_put(array_fill(NULL::int, ARRAY[$7::int]), $4::int[], $6::int[]))
ON CONFLICT (rra_bundle_id, seg, i) DO UPDATE
SET dp = aerie_array_put(t.dp, $4::int[], $5::float8[]),
    ver = aerie_array_put(t.ver, $4::int[], $6::int[])`

// schemaLockKey serializes concurrent schema creation (CREATE ... IF NOT
// EXISTS races on the catalog otherwise).
const schemaLockKey = 0x4165726965504741 // "AeriePGA"

// createSchema creates the schema if needed and checks its version.
func createSchema(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(schemaLockKey)); err != nil {
			return fmt.Errorf("lock schema: %w", err)
		}
		if _, err := tx.Exec(ctx, schemaSQL); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
		var v int
		err := tx.QueryRow(ctx, `SELECT schema_version FROM aerie_archive_meta LIMIT 1`).Scan(&v)
		switch {
		case err == pgx.ErrNoRows:
			_, err = tx.Exec(ctx, `INSERT INTO aerie_archive_meta (schema_version) VALUES ($1)`, SchemaVersion)
			if err != nil {
				return fmt.Errorf("record schema version: %w", err)
			}
		case err != nil:
			return fmt.Errorf("read schema version: %w", err)
		case v != SchemaVersion:
			return fmt.Errorf("database holds archive schema version %d; this build knows only version %d", v, SchemaVersion)
		}
		return nil
	})
}
