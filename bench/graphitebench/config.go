package graphitebench

import (
	"fmt"
	"time"

	"github.com/aerie-db/aerie/bench/harness"
)

// Config is one `aerie bench graphite` run.
type Config struct {
	harness.Options // Scale: small or medium; Aerie: "" for this executable
	// Series, CarbonSeries, Span and Runs override the scale's (Scales);
	// series are rounded down to whole hosts of MetricsPerHost series.
	Series, CarbonSeries int
	Span                 time.Duration // whole 10 s steps
	Runs                 int
	Clients              int // plaintext TCP clients [4]
	// Profile, if set, is a file for a CPU profile of Aerie's server taken
	// over (up to) ProfileSeconds of its largest ingest.
	// ProfileAfter delays it from the first dial (the first seconds of a
	// load create the series; steady appends come after).
	Profile        string
	ProfileSeconds int
	ProfileAfter   time.Duration
}

// Scales are the predefined sizes: Series (what Aerie ingests alone, its
// largest run; when equal to CarbonSeries Aerie runs once), CarbonSeries
// (what both peers ingest and the panels read), Span (of every series,
// at Step) and Runs (timed runs of each panel per peer). medium is issue
// 14 §5's 500 K series for Aerie; carbon-cache gets 20 K, since each
// whisper file of the schema takes 104 KB (8640 slots) and carbon
// creates and writes them one at a time.
var Scales = map[string]Config{
	"small":  {Series: 5_000, CarbonSeries: 5_000, Span: 5 * time.Minute, Runs: 1},
	"medium": {Series: 500_000, CarbonSeries: 20_000, Span: 10 * time.Minute, Runs: 10},
}

// Step is the interval of every series, as carbon's schema says.
const Step = 10 * time.Second

// maxSeries bounds a run (memory of the pre-generated payload).
const maxSeries = 2_000_000

// orDefault sets *v to def unless it is positive.
func orDefault[T int | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// check fills the defaults of cfg from its scale and validates it.
func (cfg *Config) check() error {
	sc, ok := Scales[cfg.Scale]
	if !ok {
		return fmt.Errorf("--scale=%q: want small or medium", cfg.Scale)
	}
	if cfg.Span > 0 && (cfg.Span%Step != 0 || cfg.Span > 6*time.Hour) {
		return fmt.Errorf("--duration=%v: want whole 10 s steps, at most 6h", cfg.Span)
	}
	orDefault(&cfg.Series, sc.Series)
	orDefault(&cfg.CarbonSeries, sc.CarbonSeries)
	orDefault(&cfg.Span, sc.Span)
	orDefault(&cfg.Runs, sc.Runs)
	orDefault(&cfg.Clients, 4)
	orDefault(&cfg.ProfileSeconds, 20)
	cfg.Series -= cfg.Series % MetricsPerHost
	cfg.CarbonSeries -= cfg.CarbonSeries % MetricsPerHost
	if cfg.Series < minHosts*MetricsPerHost || cfg.CarbonSeries < minHosts*MetricsPerHost {
		return fmt.Errorf("%d and %d series: at least %d each (%d hosts of %d series: the panels read host000??)", cfg.Series, cfg.CarbonSeries, minHosts*MetricsPerHost, minHosts, MetricsPerHost)
	}
	if cfg.Series > maxSeries || cfg.CarbonSeries > cfg.Series {
		return fmt.Errorf("%d series for Aerie, %d for carbon: want carbon's ≤ Aerie's ≤ %d", cfg.Series, cfg.CarbonSeries, maxSeries)
	}
	if cfg.Clients > 64 {
		return fmt.Errorf("%d clients: at most 64", cfg.Clients)
	}
	return nil
}
