package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/aerie-db/aerie/internal/tsdb"
)

func newInspectCmd() *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "List the blocks and head of a data directory",
		Long: `List the blocks and head of a data directory. Per block: its range, its
compaction level (0: flushed from the head), its seq (write order of
overlapping blocks: the lower wins a duplicate sample), the backfill
generation it was flushed from (0: none), its size, and the blocks merged
into it, by the last 8 characters of their ULIDs.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runInspect(cmd.OutOrStdout(), dataDir)
		},
	}
	cmd.Flags().StringVar(&dataDir, "data.dir", "./data", "data directory")
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
