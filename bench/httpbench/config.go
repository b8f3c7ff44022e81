package httpbench

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// Config is one `aerie bench http` run.
type Config struct {
	Workload string // tsbs (default) or node
	Scale    string // small, medium or large
	Aerie    string // the aerie binary ("" → this executable)
	VM       string // the victoria-metrics binary ("" → ../shared/peers/victoria-metrics from the repository root)
	Dir      string // scratch directory ("" → a temporary one, removed after)
	Seed     int64
	Clients  []int // concurrent ingest clients, one load per count (nil → 2, 4, 8)
	// LPBatch and RWBatch are the samples per request (rounded up to a
	// whole scrape): line protocol 10 000 (Telegraf's metric_batch_size of
	// 1000 lines of TSBS' 10 fields), remote write 2000 (Prometheus'
	// max_samples_per_send).
	LPBatch, RWBatch int
	// Instances and Repeats override the scale's query instances per
	// pattern and timed runs per instance.
	Instances, Repeats int
	Series             int // cardinality phase: new series (0 → the scale's)
	Log                io.Writer
}

// Scale sizes a run.
type Scale struct {
	Name     string
	Hosts    int           // tsbs hosts (10 series each); node: about as many series in targets of 517 (at least 2)
	Duration time.Duration // span of the dataset every load writes
	// Instances of each query pattern; each is run once unrecorded (its
	// answers are compared) and then Repeats times per peer.
	Instances, Repeats int
	NewSeries          int // cardinality phase
}

// Scales are the predefined sizes. small is what CI runs (≲3 min on two
// cores), medium what `make benchmarks` runs.
var Scales = map[string]Scale{
	"small":  {Name: "small", Hosts: 50, Duration: 12 * time.Hour, Instances: 1, Repeats: 3, NewSeries: 20_000},
	"medium": {Name: "medium", Hosts: 250, Duration: 12 * time.Hour, Instances: 4, Repeats: 5, NewSeries: 200_000},
	"large":  {Name: "large", Hosts: 1000, Duration: 12 * time.Hour, Instances: 5, Repeats: 6, NewSeries: 1_000_000},
}

const (
	defaultLPBatch = 10_000
	defaultRWBatch = 2_000
)

// defaultClients are the ingest client counts.
var defaultClients = []int{2, 4, 8}

// check fills the defaults of cfg and validates it.
func (cfg *Config) check() (Scale, error) {
	sc, ok := Scales[cfg.Scale]
	if !ok {
		return Scale{}, fmt.Errorf("--scale=%q: want small, medium or large", cfg.Scale)
	}
	switch cfg.Workload {
	case "":
		cfg.Workload = "tsbs"
	case "tsbs", "node":
	default:
		return Scale{}, fmt.Errorf("--workload=%q: want tsbs or node", cfg.Workload)
	}
	if len(cfg.Clients) == 0 {
		cfg.Clients = defaultClients
	}
	for _, c := range cfg.Clients {
		if c < 1 || c > 64 {
			return Scale{}, fmt.Errorf("--clients: %d is not in [1, 64]", c)
		}
	}
	cfg.Clients = slices.Clone(cfg.Clients)
	slices.Sort(cfg.Clients)
	cfg.Clients = slices.Compact(cfg.Clients)
	if cfg.LPBatch <= 0 {
		cfg.LPBatch = defaultLPBatch
	}
	if cfg.RWBatch <= 0 {
		cfg.RWBatch = defaultRWBatch
	}
	if cfg.Instances > 0 {
		sc.Instances = cfg.Instances
	}
	if cfg.Repeats > 0 {
		sc.Repeats = cfg.Repeats
	}
	if cfg.Series > 0 {
		sc.NewSeries = cfg.Series
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	return sc, nil
}
