package graphitebench

import (
	"fmt"
	"io"
	"time"
)

// Config is one `aerie bench graphite` run.
type Config struct {
	Scale string // small or medium
	// Series and CarbonSeries override the scale's (rounded down to whole
	// hosts of MetricsPerHost series).
	Series, CarbonSeries int
	Span                 time.Duration // overrides the scale's span (whole 10 s steps)
	Aerie                string        // the aerie binary ("" → this executable)
	Dir                  string        // scratch directory ("" → a temporary one, removed after)
	Clients              int           // plaintext TCP clients [4]
	Runs                 int           // timed runs of each panel per peer (0 → the scale's)
	// Profile, if set, is a file for a CPU profile of Aerie's server taken
	// over (up to) ProfileSeconds of its largest ingest.
	// ProfileAfter delays it from the first dial (the first seconds of a
	// load create the series; steady appends come after).
	Profile        string
	ProfileSeconds int
	ProfileAfter   time.Duration
	Log            io.Writer
}

// Scale sizes a run.
type Scale struct {
	Name string
	// Series is what Aerie ingests alone (its largest run); CarbonSeries
	// is what both peers ingest and what the panels read. When they are
	// equal Aerie runs once.
	Series, CarbonSeries int
	Span                 time.Duration // of every series, at Step
	Runs                 int           // timed runs of each panel per peer
}

// Scales are the predefined sizes. medium is issue 14 §5's 500 K series
// for Aerie; carbon-cache gets 20 K, since each whisper file of the
// schema takes 104 KB (8640 slots) and carbon creates and writes them
// one at a time.
var Scales = map[string]Scale{
	"small":  {Name: "small", Series: 5_000, CarbonSeries: 5_000, Span: 5 * time.Minute, Runs: 1},
	"medium": {Name: "medium", Series: 500_000, CarbonSeries: 20_000, Span: 10 * time.Minute, Runs: 10},
}

// Step is the interval of every series, as carbon's schema says.
const Step = 10 * time.Second

// defaultClients are the plaintext TCP connections, one goroutine each.
const defaultClients = 4

// maxSeries bounds a run (memory of the pre-generated payload).
const maxSeries = 2_000_000

// check fills the defaults of cfg and validates it.
func (cfg *Config) check() (Scale, error) {
	sc, ok := Scales[cfg.Scale]
	if !ok {
		return Scale{}, fmt.Errorf("--scale=%q: want small or medium", cfg.Scale)
	}
	if cfg.Series > 0 {
		sc.Series = cfg.Series
	}
	if cfg.CarbonSeries > 0 {
		sc.CarbonSeries = cfg.CarbonSeries
	}
	sc.Series -= sc.Series % MetricsPerHost
	sc.CarbonSeries -= sc.CarbonSeries % MetricsPerHost
	if sc.Series < minHosts*MetricsPerHost || sc.CarbonSeries < minHosts*MetricsPerHost {
		return Scale{}, fmt.Errorf("%d and %d series: at least %d each (%d hosts of %d series: the panels read host000??)", sc.Series, sc.CarbonSeries, minHosts*MetricsPerHost, minHosts, MetricsPerHost)
	}
	if sc.Series > maxSeries || sc.CarbonSeries > sc.Series {
		return Scale{}, fmt.Errorf("%d series for Aerie, %d for carbon: want carbon's ≤ Aerie's ≤ %d", sc.Series, sc.CarbonSeries, maxSeries)
	}
	if cfg.Span > 0 {
		if cfg.Span%Step != 0 || cfg.Span > 6*time.Hour {
			return Scale{}, fmt.Errorf("--duration=%v: want whole 10 s steps, at most 6h", cfg.Span)
		}
		sc.Span = cfg.Span
	}
	if cfg.Runs > 0 {
		sc.Runs = cfg.Runs
	}
	if cfg.Clients <= 0 {
		cfg.Clients = defaultClients
	}
	if cfg.Clients > 64 {
		return Scale{}, fmt.Errorf("%d clients: at most 64", cfg.Clients)
	}
	if cfg.ProfileSeconds <= 0 {
		cfg.ProfileSeconds = 20
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	return sc, nil
}
