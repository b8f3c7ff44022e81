package main

import (
	"fmt"
	"io"
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runInspect(cmd.OutOrStdout(), dataDir)
		},
	}
	cmd.Flags().StringVar(&dataDir, "data.dir", "./data", "data directory")
	return cmd
}

func runInspect(w io.Writer, dir string) error {
	db, err := tsdb.Open(dir, &tsdb.Options{FlushCheckInterval: -1})
	if err != nil {
		return err
	}
	defer db.Close()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BLOCK\tMIN TIME\tMAX TIME\tSERIES\tGROUPS\tSAMPLES\tBYTES\tB/SAMPLE")
	for _, b := range db.Blocks() {
		bytes := b.Stats.DataBytes + b.Stats.IndexBytes
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%.3f\n", b.ULID,
			time.UnixMilli(b.MinTime).UTC().Format(time.RFC3339), time.UnixMilli(b.MaxTime).UTC().Format(time.RFC3339),
			b.Stats.Series, b.Stats.Groups, b.Stats.Samples, bytes, float64(bytes)/float64(max(1, b.Stats.Samples)))
	}
	tw.Flush()
	st := db.Stats()
	fmt.Fprintf(w, "head: %d series in %d groups; %d blocks quarantined\n", st.HeadSeries, st.HeadGroups, st.Quarantined)
	return nil
}
