package sensorbench

import (
	"fmt"
	"time"

	"github.com/aerie-db/aerie/bench/harness"
)

// Config is one `aerie bench sensors` run: the common options (Dir keeps
// the generated data for later runs) and the workload's own.
type Config struct {
	harness.Options
	Sensors int           // overrides the scale's sensors
	Span    time.Duration // overrides the scale's span (whole hours)
	VM      string        // the victoria-metrics binary ("" → victoria-metrics in Options.Peers)
	Clients int           // concurrent upload clients [4]
}

// Scale sizes a run.
type Scale struct {
	Name    string
	Sensors int
	Span    time.Duration // of every sensor's history, at 1 Hz
	// Repeats is how often each search query is timed per peer.
	Repeats int
	// ExtractRecords is about how many records each extraction case
	// reads, within [MinRequests, MaxRequests] requests.
	ExtractRecords           int64
	MinRequests, MaxRequests int
	// FlushWait bounds the wait for Aerie's first partition flush after
	// the upload (its loop looks once a minute); Rest is how long Aerie's
	// flush and compaction counters must stay unchanged before it counts
	// as settled.
	FlushWait, Rest time.Duration
}

// Scales are the predefined sizes: small is what CI and `go test -short`
// run, medium is Peregreen §4's 1000 sensors × 1 year scaled to this
// machine (`make benchmarks`), large a month of the same sensors.
var Scales = map[string]Scale{
	"small":  {Name: "small", Sensors: 4, Span: 6 * time.Hour, Repeats: 3, ExtractRecords: 20_000, MinRequests: 2, MaxRequests: 6, FlushWait: 5 * time.Second, Rest: time.Second},
	"medium": {Name: "medium", Sensors: 100, Span: 7 * 24 * time.Hour, Repeats: 5, ExtractRecords: 5_000_000, MinRequests: 20, MaxRequests: 1000, FlushWait: 90 * time.Second, Rest: 5 * time.Second},
	"large":  {Name: "large", Sensors: 100, Span: 30 * 24 * time.Hour, Repeats: 5, ExtractRecords: 10_000_000, MinRequests: 20, MaxRequests: 1000, FlushWait: 90 * time.Second, Rest: 5 * time.Second},
}

// defaultClients is the upload clients: a few, as Peregreen's benchmark
// uploads from every node at once.
const defaultClients = 4

// extractClients read extraction answers at once: as many as cores, so
// that the server has work while a client decodes.
const extractClients = 2

// check fills the defaults of cfg and validates it.
func (cfg *Config) check() (Scale, error) {
	sc, ok := Scales[cfg.Scale]
	if !ok {
		return Scale{}, fmt.Errorf("--scale=%q: want small, medium or large", cfg.Scale)
	}
	if cfg.Sensors > 0 {
		sc.Sensors = cfg.Sensors
	}
	if cfg.Span > 0 {
		if cfg.Span%time.Hour != 0 {
			return Scale{}, fmt.Errorf("--duration=%v: want whole hours", cfg.Span)
		}
		sc.Span = cfg.Span
	}
	if sc.Sensors > 9999 {
		return Scale{}, fmt.Errorf("%d sensors: at most 9999", sc.Sensors)
	}
	if cfg.Clients <= 0 {
		cfg.Clients = defaultClients
	}
	if cfg.Clients > 64 {
		return Scale{}, fmt.Errorf("%d upload clients: at most 64", cfg.Clients)
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.VM == "" {
		cfg.VM = cfg.Peer("victoria-metrics")
	}
	return sc, nil
}
