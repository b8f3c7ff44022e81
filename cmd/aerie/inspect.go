package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/aerie-db/aerie/internal/block"
	"github.com/aerie-db/aerie/internal/tsdb"
)

func newInspectCmd() *cobra.Command {
	var (
		dataDir string
		parts   bool
	)
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "List the blocks and head of a data directory",
		Long: `List the blocks and head of a data directory. Per block: its range, its
compaction level (0: flushed from the head), its seq (write order of
overlapping blocks: the lower wins a duplicate sample), the backfill
generation it was flushed from (0: none), its size, and the blocks merged
into it, by the last 8 characters of their ULIDs.

With --parts, it says instead where each block's bytes go, in bytes a
sample: timestamp columns, value columns, the rest of the data file, block
metrics, the rest of the index; and the value columns' chunks by kind
(empty, constant, decimal, XOR: how many and their bytes a sample).`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if parts {
				return runInspectParts(cmd.OutOrStdout(), dataDir)
			}
			return runInspect(cmd.OutOrStdout(), dataDir)
		},
	}
	cmd.Flags().StringVar(&dataDir, "data.dir", "./data", "data directory")
	cmd.Flags().BoolVar(&parts, "parts", false, "where each block's bytes go, by part and by chunk kind")
	cmd.AddCommand(newInspectBucketCmd())
	return cmd
}

func runInspect(w io.Writer, dir string) error {
	db, err := tsdb.Open(dir, &tsdb.Options{FlushCheckInterval: -1})
	if err != nil {
		return err
	}
	defer db.Close()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BLOCK\tMIN TIME\tMAX TIME\tLEVEL\tSEQ\tBACKFILL\tSERIES\tGROUPS\tSAMPLES\tBYTES\tB/SAMPLE\tPARENTS")
	for _, b := range db.Blocks() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.3f\t%s\n", b.ULID,
			time.UnixMilli(b.MinTime).UTC().Format(time.RFC3339), time.UnixMilli(b.MaxTime).UTC().Format(time.RFC3339),
			b.Compaction.Level, b.Seq, b.Backfill,
			b.Stats.Series, b.Stats.Groups, b.Stats.Samples, b.Stats.Bytes(), b.Stats.BytesPerSample(),
			shortIDs(b.Compaction.Parents))
	}
	tw.Flush()
	st := db.Stats()
	fmt.Fprintf(w, "head: %d series in %d groups; %d blocks quarantined\n", st.HeadSeries, st.HeadGroups, st.Quarantined)
	return nil
}

func runInspectParts(w io.Writer, dir string) error {
	db, err := tsdb.Open(dir, &tsdb.Options{FlushCheckInterval: -1})
	if err != nil {
		return err
	}
	defer db.Close()
	metas, sizes, err := db.BlockSizes()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "BLOCK\tSAMPLES\tB/SAMPLE\tTIMESTAMPS\tVALUES\tDATA OTHER\tMETRICS\tINDEX OTHER\tCHUNKS E/C/D/X\tCHUNK B/SAMPLE C/D/X\t")
	var total block.Sizes
	var samples, bytes int64
	row := func(name string, n, b int64, s block.Sizes) {
		per := func(x int64) string { return fmt.Sprintf("%.4f", float64(x)/float64(max(n, 1))) }
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d/%d/%d/%d\t%s/%s/%s\t\n", name, n, per(b),
			per(s.Timestamps), per(s.Values), per(s.DataOther), per(s.Metrics), per(s.IndexOther),
			s.Chunks[0], s.Chunks[1], s.Chunks[2], s.Chunks[3], per(s.ChunkBytes[1]), per(s.ChunkBytes[2]), per(s.ChunkBytes[3]))
	}
	for i, m := range metas {
		s := sizes[i]
		row(m.ULID, int64(m.Stats.Samples), m.Stats.Bytes(), s)
		samples, bytes = samples+int64(m.Stats.Samples), bytes+m.Stats.Bytes()
		total.Add(s)
	}
	row("all blocks", samples, bytes, total)
	return tw.Flush()
}

// shortIDs lists ULIDs by their last characters (random, so distinct; the
// first ten are a timestamp shared by blocks written together), "-" if none.
func shortIDs(ids []string) string {
	if len(ids) == 0 {
		return "-"
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id[max(0, len(id)-8):]
	}
	return strings.Join(out, ",")
}
