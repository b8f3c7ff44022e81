package graphitebench

import (
	"io"

	"github.com/aerie-db/aerie/bench/harness"
)

// Kind marks the JSON of this report ("kind"), for `aerie bench report`.
const Kind = "graphite"

// Figures beside which Aerie's are shown (issue 14 §5).
const (
	TgresPointsPerSecond = 150_000   // Tgres: 500 K series on 8 cores, PostgreSQL on the same box
	GoalPointsPerSecond  = 1_000_000 // issue 14's goal on this machine's 2 cores
)

// Report is one run of `aerie bench graphite`.
type Report struct {
	harness.Header
	Config map[string]string `json:"config"`
	Peers  []Peer            `json:"peers"`
	Ingest []IngestResult    `json:"ingest"`
	Panels []PanelResult     `json:"panels"`
	Ratios []harness.Ratio   `json:"ratios"`
	// Profile is the top frames of Aerie's CPU profile over its largest
	// ingest (go tool pprof -top), when one was taken.
	Profile []string `json:"profile,omitempty"`
	Notes   []string `json:"notes,omitempty"`
}

// Peer is one server as it was run.
type Peer struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Args    string `json:"args"`
}

// IngestResult is one load of a dataset over plaintext TCP into a fresh
// server.
type IngestResult struct {
	Peer    string `json:"peer"`
	Series  int    `json:"series"`
	Steps   int    `json:"steps"` // points per series, 10 s apart
	Points  int64  `json:"points"`
	Bytes   int64  `json:"bytes"`
	Clients int    `json:"clients"`
	// AcceptSeconds is from the first dial until every client's
	// connection was closed by the server after reading everything.
	AcceptSeconds      float64 `json:"accept_seconds"`
	AcceptedPerSecond  float64 `json:"accepted_per_second"`
	StoredSeconds      float64 `json:"stored_seconds"` // from the first dial until every point was stored
	StoredPerSecond    float64 `json:"stored_per_second"`
	Stored             int64   `json:"stored"`  // points counted in storage afterwards
	Dropped            int64   `json:"dropped"` // Points - Stored
	CPUSeconds         float64 `json:"cpu_seconds"`
	StoredPerCPUSecond float64 `json:"stored_per_cpu_second"`
	// RunWaitSeconds is how long the server's threads were runnable but
	// waited for a core over the interval (schedstat): the machine's
	// other work.
	RunWaitSeconds float64 `json:"run_wait_seconds"`
	RSSPeakBytes   int64   `json:"rss_peak_bytes"`
	RSSEndBytes    int64   `json:"rss_end_bytes"`
	How            string  `json:"how"` // how stored was counted
	Note           string  `json:"note,omitempty"`
}

// PanelResult is one panel rendered by both peers.
type PanelResult struct {
	Name     string   `json:"name"`
	Target   string   `json:"target"`
	Range    string   `json:"range"`
	Series   int      `json:"series"`   // in graphite-web's answer
	Points   int      `json:"points"`   // non-null, in graphite-web's answer
	Runs     int      `json:"runs"`     // timed, per peer
	Aerie    Latency  `json:"aerie"`    // latency of /render
	Graphite Latency  `json:"graphite"` //
	Ratio    float64  `json:"ratio"`    // Aerie's p50 ÷ graphite-web's
	Diffs    int      `json:"diffs"`    // points that differ
	Examples []string `json:"examples,omitempty"`
}

// Latency is the median and 90th percentile of a panel's timed runs, from
// sending the request to reading the last byte of the answer.
type Latency struct {
	P50Ms float64 `json:"p50_ms"`
	P90Ms float64 `json:"p90_ms"`
}

// WriteJSON writes the report as indented JSON.
func (rep *Report) WriteJSON(w io.Writer) error { return harness.WriteJSON(w, rep) }

// WriteTable writes the report as text, for the terminal.
func (rep *Report) WriteTable(w io.Writer) error { return rep.WriteMarkdown(w) }

// series is the most series peer ingested (0: none).
func (rep *Report) series(peer string) int {
	n := 0
	for _, in := range rep.Ingest {
		if in.Peer == peer {
			n = max(n, in.Series)
		}
	}
	return n
}

// ingest returns peer's last ingest of series series (0: of the most),
// or nil.
func (rep *Report) ingest(peer string, series int) *IngestResult {
	if series == 0 {
		series = rep.series(peer)
	}
	var found *IngestResult
	for i, in := range rep.Ingest {
		if in.Peer == peer && in.Series == series {
			found = &rep.Ingest[i]
		}
	}
	return found
}
