package cachebench

import (
	"cmp"
	"fmt"
	"io"
	"time"
)

// Config is one `aerie bench cache` run.
type Config struct {
	Scale string // small or medium
	// Queries overrides the scale's queries per workload.
	Queries int
	// Clients is the number of client goroutines (the paper's 64; default
	// 16 on this 2-core machine).
	Clients int
	// Workloads names the workloads to run (default: all of Workloads).
	Workloads []string
	// CacheShare is the size of each cache as a share of the dataset's
	// bytes (default 0.1, the paper's 10 %).
	CacheShare float64
	// CheckEvery: every CheckEvery-th query's answer is compared with
	// InfluxDB's own answer after the timed run (default 50).
	CheckEvery int
	Seed       uint64    // of the query generator (default 1)
	Dir        string    // scratch directory ("" → a temporary one, removed after)
	Log        io.Writer // progress (nil → none)
}

// Scale sizes the dataset and the runs.
type Scale struct {
	Name     string
	Sensors  int           // tag values of "sensor"
	Span     time.Duration // of every sensor's data, at Interval
	Interval time.Duration
	Queries  int // per workload and system
}

// Scales are the predefined sizes: small for CI (the whole run within a
// minute on 2 cores), medium for docs/BENCHMARKS.md.
var Scales = map[string]Scale{
	"small":  {Name: "small", Sensors: 16, Span: 14 * 24 * time.Hour, Interval: time.Minute, Queries: 500},
	"medium": {Name: "medium", Sensors: 16, Span: 60 * 24 * time.Hour, Interval: time.Minute, Queries: 5000},
}

// ChunkUnit is the fixed time unit of the memcached baseline's chunks
// (the paper's Fatcache-4h).
const ChunkUnit = 4 * time.Hour

// check fills the defaults of cfg and validates it.
func (cfg *Config) check() (Scale, []Workload, error) {
	sc, ok := Scales[cfg.Scale]
	if !ok {
		return Scale{}, nil, fmt.Errorf("--scale=%q: want small or medium", cfg.Scale)
	}
	if cfg.Queries > 0 {
		sc.Queries = cfg.Queries
	}
	cfg.Clients, cfg.CacheShare, cfg.CheckEvery, cfg.Seed = cmp.Or(cfg.Clients, 16), cmp.Or(cfg.CacheShare, 0.1), cmp.Or(cfg.CheckEvery, 50), cmp.Or(cfg.Seed, 1)
	switch {
	case cfg.Clients < 1 || cfg.Clients > 256:
		return Scale{}, nil, fmt.Errorf("%d clients: want 1 to 256", cfg.Clients)
	case cfg.CacheShare <= 0 || cfg.CacheShare > 1:
		return Scale{}, nil, fmt.Errorf("cache share %g: want 0 < x <= 1", cfg.CacheShare)
	case cfg.CheckEvery < 1:
		return Scale{}, nil, fmt.Errorf("check every %d queries: want at least 1", cfg.CheckEvery)
	}
	ws := Workloads
	if len(cfg.Workloads) > 0 {
		ws = nil
	}
	for _, name := range cfg.Workloads {
		w, ok := workloadNamed(name)
		if !ok {
			return Scale{}, nil, fmt.Errorf("workload %q: want one of full, small, medium, large, mixed", name)
		}
		ws = append(ws, w)
	}
	for _, w := range ws {
		if w.MaxLen() >= sc.Span {
			return Scale{}, nil, fmt.Errorf("workload %s: ranges up to %v do not fit in %v of data", w.Name, w.MaxLen(), sc.Span)
		}
	}
	return sc, ws, nil
}
