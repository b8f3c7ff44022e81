package bucket_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/bucket"
	"github.com/aerie-db/aerie/internal/bucket/faultproxy"
	"github.com/aerie-db/aerie/internal/difftest"
	"github.com/aerie-db/aerie/internal/head"
	"github.com/aerie-db/aerie/internal/tsdb"
)

type aerieEngine struct{ *tsdb.DB }

func (e aerieEngine) NewAppender() difftest.Appender { return e.DB.RowAppender() }

var _ difftest.Appender = (*head.Appender)(nil)

// TestDifferentialBucket is the differential test's bucket stage: one
// randomized workload in Aerie and in prometheus/tsdb; Aerie's blocks
// move to versitygw through a proxy that delays every request and fails
// a share of them (503s, cut bodies, resets); then, with their local
// copies deleted, every Select and PromQL answer, its data fetched
// through the faulty proxy, must equal prometheus/tsdb's bit for bit.
// It uses the small workload (one hour in 30-minute partitions).
func TestDifferentialBucket(t *testing.T) {
	cfg := difftest.Small() // the full workload takes minutes through versitygw
	selects := 100
	w := difftest.Generate(cfg)
	prom, err := difftest.OpenProm(t.TempDir(), cfg.OOOWindow)
	require.NoError(t, err)
	defer prom.Close()
	w.Write(t, prom)

	b, proxy, _ := openThroughProxy(t, faultproxy.Options{Latency: time.Millisecond, P503: 0.1, PTruncate: 0.05, PReset: 0.05, Seed: 3}, 8)
	tier := bucket.NewTier(b, 256<<10, 8<<20) // small objects: several per block
	db, err := tsdb.Open(t.TempDir(), &tsdb.Options{OOOWindow: cfg.OOOWindow, PartitionRange: cfg.OOOWindow, FlushCheckInterval: -1, Remote: tier, LocalRetention: 1})
	require.NoError(t, err)
	defer db.Close()
	w.Write(t, aerieEngine{db})
	require.NoError(t, db.FlushHead())
	require.NoError(t, db.ShipBlocks(context.Background()))
	ids, err := bucket.ListBlocks(context.Background(), b)
	require.NoError(t, err)
	require.NotEmpty(t, ids)
	require.Less(t, len(db.Blocks())-len(ids), len(db.Blocks()), "blocks left local")

	before := proxy.Stats()
	n := difftest.CompareSelect(t, w, prom, db, selects, 7)
	qs := difftest.CompareQueries(t, w, prom, db)
	w.Verify(t, db)
	after := proxy.Stats()
	require.Positive(t, tier.Stats.Gets.Load())
	require.Positive(t, after.Unavailable+after.Truncated+after.Reset, "no fault injected")
	t.Logf("%d of %d blocks in the bucket; %d selects (%d non-empty), queries %+v; %d GETs, %d bytes fetched for %d needed; faults while reading: %d 503s, %d cut, %d resets",
		len(ids), len(db.Blocks()), selects, n, qs, tier.Stats.Gets.Load(), tier.Stats.BytesFetched.Load(), tier.Stats.BytesNeeded.Load(),
		after.Unavailable-before.Unavailable, after.Truncated-before.Truncated, after.Reset-before.Reset)
}
