// Package workloads registers every benchmark with the harness: `aerie
// bench` imports it. A new workload is a package declaring a
// *harness.Workload and one line here.
package workloads

import (
	"io"
	"os"

	"github.com/aerie-db/aerie/bench"
	"github.com/aerie-db/aerie/bench/bucketbench"
	"github.com/aerie-db/aerie/bench/cachebench"
	"github.com/aerie-db/aerie/bench/codecbench"
	"github.com/aerie-db/aerie/bench/graphitebench"
	"github.com/aerie-db/aerie/bench/harness"
	"github.com/aerie-db/aerie/bench/httpbench"
	"github.com/aerie-db/aerie/bench/rollupbench"
	"github.com/aerie-db/aerie/bench/sensorbench"
)

// The order of registration is the order of `aerie bench list`, of make
// benchmarks' runs and of docs/BENCHMARKS.md's sections.
func init() {
	harness.Register(bench.Node, bench.Random, bench.TSBS, bench.History)
	harness.Register(httpbench.HTTP)
	harness.Register(bucketbench.Bucket)
	harness.Register(sensorbench.Sensors)
	harness.Register(rollupbench.Rollup)
	harness.Register(graphitebench.Graphite)
	harness.Register(cachebench.Cache)
	harness.Register(httpbench.Dashboard)
	harness.Register(codecbench.Codec)
}

// WriteDocument writes docs/BENCHMARKS.md from the JSON reports at paths
// (any registered workload's), in the order given, the engine reports'
// sections first: bench.WriteDocument.
func WriteDocument(w io.Writer, paths []string, command, notes string) error {
	var reps []harness.Report
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		_, r, err := harness.ReadReport(path, b)
		if err != nil {
			return err
		}
		reps = append(reps, r)
	}
	return bench.WriteDocument(w, reps, command, notes)
}
