package harness

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/spf13/pflag"
)

// Options are the flags every workload takes (`aerie bench NAME`).
type Options struct {
	Scale string    // small (CI), medium (make benchmarks) or large
	Dir   string    // scratch directory ("": a temporary one, removed after)
	Seed  int64     // workload and query seed
	Peers string    // directory of the peers' binaries (default ../shared/peers)
	Aerie string    // the aerie binary a server workload runs ("": this executable)
	Log   io.Writer // progress; nil with --quiet
}

// Report is what a workload's run returns: its section of
// docs/BENCHMARKS.md, its terminal table and its JSON.
type Report interface {
	WriteTable(w io.Writer) error
	WriteMarkdown(w io.Writer) error
	WriteJSON(w io.Writer) error
}

// Run runs a workload with the common options.
type Run func(ctx context.Context, o Options) (Report, error)

// Workload is one benchmark as `aerie bench` knows it.
type Workload struct {
	Name     string // `aerie bench NAME`
	Compares string // one line for `aerie bench list`: what against what
	Doc      string // the command's long help
	// Flags declares the workload's own flags on fs (beside Options') and
	// returns the run that reads them.
	Flags func(fs *pflag.FlagSet) Run
	// Kind is the "kind" of the workload's JSON reports ("" for the
	// engine reports, which have none); Read decodes one (path for
	// errors). Workloads sharing a report kind (node, random, tsbs,
	// history) set the same Kind and Read.
	Kind string
	Read func(path string, b []byte) (Report, error)
}

var (
	registry = map[string]*Workload{}
	order    []*Workload // registration order: `aerie bench list`, make benchmarks
)

// Register adds workloads; a name registered twice panics (a programming
// error caught by any test that imports the registry).
func Register(ws ...*Workload) {
	for _, w := range ws {
		if _, dup := registry[w.Name]; dup {
			panic(fmt.Sprintf("harness: workload %q registered twice", w.Name))
		}
		if w.Flags == nil || w.Read == nil {
			panic(fmt.Sprintf("harness: workload %q lacks Flags or Read", w.Name))
		}
		registry[w.Name] = w
		order = append(order, w)
	}
}

// Lookup returns the workload named name.
func Lookup(name string) (*Workload, bool) {
	w, ok := registry[name]
	return w, ok
}

// Workloads returns every registered workload in registration order.
func Workloads() []*Workload { return slices.Clone(order) }

// ReadReport decodes the JSON b of any registered workload's report by
// its kind, and returns the workload that reads it.
func ReadReport(path string, b []byte) (*Workload, Report, error) {
	kind := KindOf(b)
	for _, w := range order {
		if w.Kind == kind {
			r, err := w.Read(path, b)
			return w, r, err
		}
	}
	return nil, nil, fmt.Errorf("%s: no workload reads reports of kind %q", path, kind)
}

// Peer returns the path of the peer binary name in the peers directory.
func (o Options) Peer(name string) string {
	dir := o.Peers
	if dir == "" {
		dir = DefaultPeersDir()
	}
	return filepath.Join(dir, name)
}

// ReadAs is a Workload.Read for a report type T of kind whose pointer is
// a Report: Read: harness.ReadAs[Report](Kind).
func ReadAs[T any, P interface {
	*T
	Report
}](kind string) func(path string, b []byte) (Report, error) {
	return func(path string, b []byte) (Report, error) {
		var v T
		if err := ReadJSON(path, b, kind, &v); err != nil {
			return nil, err
		}
		return P(&v), nil
	}
}

// Returned is a Run's return of a workload's Run(ctx, cfg): its report,
// or a nil Report (not a typed nil) where there is none, and the error,
// which may come with a report (answers that differ, after the figures).
func Returned[P interface {
	*T
	Report
}, T any](rep P, err error) (Report, error) {
	if rep == nil {
		return nil, err
	}
	return rep, err
}
