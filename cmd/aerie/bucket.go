package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/aerie-db/aerie/internal/bucket"
	"github.com/aerie-db/aerie/internal/server"
)

// openBucket opens the bucket that the configuration file's
// `aerie: storage: bucket:` names (none: the filesystem bucket at
// <data.dir>/bucket).
func openBucket(configFile, dataDir string) (*bucket.Bucket, error) {
	cfg, err := server.LoadConfig(configFile, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	var bc bucket.Config
	if cfg.Aerie.Storage.Bucket != nil {
		bc = *cfg.Aerie.Storage.Bucket
	}
	return bucket.Open(bc, dataDir, slog.New(slog.DiscardHandler), prometheus.NewRegistry())
}

func bucketFlags(cmd *cobra.Command, configFile, dataDir *string) {
	cmd.Flags().StringVar(configFile, "config.file", "", "configuration file whose aerie: storage: bucket: section names the bucket (default: the filesystem bucket under --data.dir)")
	cmd.Flags().StringVar(dataDir, "data.dir", "./data", "data directory (the filesystem bucket is <data.dir>/bucket)")
}

func newBucketCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "bucket", Short: "Check the object-storage tier"}
	var configFile, dataDir string
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Read every object of the bucket and check every CRC",
		Long: `Read every object of the bucket and check every CRC: the TagDict
segments, each block's metadata object, each data object whole and each
group extent in it (docs/format/bucket.md). Exits non-zero if anything is
damaged, naming the object and byte offset.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := openBucket(configFile, dataDir)
			if err != nil {
				return err
			}
			defer b.Close()
			return runBucketVerify(cmd.Context(), cmd.OutOrStdout(), b)
		},
	}
	bucketFlags(verify, &configFile, &dataDir)
	cmd.AddCommand(verify)
	return cmd
}

func runBucketVerify(ctx context.Context, w io.Writer, st bucket.RangeStore) error {
	if ctx == nil {
		ctx = context.Background()
	}
	rep, err := bucket.Verify(ctx, st)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%d TagDict segments, %d blocks, %d data objects, %d group extents, %d bytes read\n", rep.Segments, rep.Blocks, rep.Objects, rep.Extents, rep.Bytes)
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "damaged: %v\n", p)
	}
	if len(rep.Problems) > 0 {
		return fmt.Errorf("%d damaged objects or extents", len(rep.Problems))
	}
	fmt.Fprintln(w, "every checksum matches")
	return nil
}

func newInspectBucketCmd() *cobra.Command {
	var configFile, dataDir string
	cmd := &cobra.Command{
		Use:   "bucket",
		Short: "List the blocks of the bucket, their data objects and groups per object",
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := openBucket(configFile, dataDir)
			if err != nil {
				return err
			}
			defer b.Close()
			return runInspectBucket(cmd.Context(), cmd.OutOrStdout(), b)
		},
	}
	bucketFlags(cmd, &configFile, &dataDir)
	return cmd
}

func runInspectBucket(ctx context.Context, w io.Writer, st bucket.RangeStore) error {
	if ctx == nil {
		ctx = context.Background()
	}
	blocks, err := bucket.Inspect(ctx, st)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BLOCK\tMIN TIME\tMAX TIME\tLEVEL\tSERIES\tSAMPLES\tGROUPS\tOBJECTS\tGROUPS/OBJECT\tDATA BYTES\tMETA BYTES\tMETRICS BYTES")
	for _, b := range blocks {
		var data int64
		per := ""
		for i, o := range b.Objects {
			data += o.Bytes
			if i > 0 {
				per += ","
			}
			per += fmt.Sprint(o.Groups)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%d\n", b.ULID,
			time.UnixMilli(b.MinTime).UTC().Format(time.RFC3339), time.UnixMilli(b.MaxTime).UTC().Format(time.RFC3339),
			b.Level, b.Series, b.Samples, b.Groups, len(b.Objects), per, data, b.MetaBytes, b.MetricsBytes)
	}
	return tw.Flush()
}
