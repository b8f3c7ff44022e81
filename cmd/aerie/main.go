package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "aerie:", err)
		os.Exit(1)
	}
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "aerie",
		Short:         "Aerie, a time-series database for monitoring and sensor history",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServeCmd(), newDemoCmd(), newInspectCmd(), newBenchCmd(), newImportCmd(), newBucketCmd(), newCacheCmd())
	return root
}
