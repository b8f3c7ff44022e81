package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/stretchr/testify/require"

	"github.com/aerie-db/aerie/internal/bucket"
	"github.com/aerie-db/aerie/internal/tsdb"
)

// TestBucketCommands: blocks shipped to the default filesystem bucket are
// listed by `aerie inspect bucket` and pass `aerie bucket verify`, which
// fails naming the object once a data object is damaged.
func TestBucketCommands(t *testing.T) {
	dir := t.TempDir()
	b, err := bucket.Open(bucket.Config{}, dir, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
	require.NoError(t, err)
	db, err := tsdb.Open(dir, &tsdb.Options{FlushCheckInterval: -1, PartitionRange: 3600_000, LocalRetention: 3600_000, Remote: bucket.NewTier(b, 0, 1<<20)})
	require.NoError(t, err)
	for i := int64(0); i < 3*360; i++ {
		app := db.RowAppender()
		for h := range 3 {
			require.NoError(t, app.Append(labels.FromStrings("__name__", "m", "job", "j", "instance", fmt.Sprint(h)), i*10_000, float64(i)))
		}
		require.NoError(t, app.Commit())
	}
	require.NoError(t, db.FlushHead())
	require.NoError(t, db.ShipBlocks(context.Background()))
	require.NoError(t, db.Close())
	require.NoError(t, b.Close())

	run := func(args ...string) (string, error) {
		cmd := newRootCmd()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String(), err
	}
	out, err := run("inspect", "bucket", "--data.dir", dir)
	require.NoError(t, err, out)
	require.Contains(t, out, "GROUPS/OBJECT")
	require.GreaterOrEqual(t, strings.Count(out, "\n"), 2, out) // header and the block past the local retention
	out, err = run("bucket", "verify", "--data.dir", dir)
	require.NoError(t, err, out)
	require.Contains(t, out, "every checksum matches")

	objs, err := filepath.Glob(filepath.Join(dir, "bucket", "blocks", "*", "data-000000"))
	require.NoError(t, err)
	require.NotEmpty(t, objs)
	data, err := os.ReadFile(objs[0])
	require.NoError(t, err)
	data[len(data)/2] ^= 1
	require.NoError(t, os.WriteFile(objs[0], data, 0o644))
	out, err = run("bucket", "verify", "--data.dir", dir)
	require.Error(t, err)
	require.Contains(t, out, "damaged: ")
	require.Contains(t, out, "data-000000")
}
