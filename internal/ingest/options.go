package ingest

import (
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/storage"

	"github.com/aerie-db/aerie/internal/head"
	"github.com/aerie-db/aerie/internal/positive"
	"github.com/aerie-db/aerie/internal/tsdb"
)

// Options configure the handlers. Zero values take the defaults in
// brackets.
type Options struct {
	MaxBodyBytes int64 // [64 MiB] on the wire and after decompression
	BatchSamples int   // [10000] samples per Commit
	MaxReported  int   // [10] bad lines named in an error message
	// SeriesCache is how many series as written (an Influx measurement
	// and tags, with their fields; a remote-write series) a handler
	// remembers the storage refs of, so their samples skip label building
	// and lookup [1<<22; about 40 B each, and 40 B an Influx field].
	SeriesCache int
	Logger      *slog.Logger // [discard]

	// Metrics, if set, is called once per request and reason with the
	// number of samples stored (reason ReasonOK) or rejected, so a server
	// can export aerie_ingested_samples_total{protocol} and
	// aerie_rejected_samples_total{protocol,reason}. Protocols are
	// ProtocolInflux and ProtocolPromImport.
	Metrics func(protocol, reason string, n int)

	// Now is the receipt time of a request [time.Now].
	Now func() time.Time
}

// Protocols passed to Options.Metrics.
const (
	ProtocolInflux     = "influx"
	ProtocolPromImport = "import_prometheus"
)

// Reasons passed to Options.Metrics. The storage reasons match the
// server's names for Append errors.
const (
	ReasonOK              = "ok"
	ReasonParse           = "parse_error"
	ReasonStringField     = "string_field"
	ReasonInexact         = "inexact_integer"
	ReasonNativeHistogram = "native_histogram"
	ReasonOutOfBounds     = "out_of_bounds"
	ReasonRetention       = "too_old_for_retention"
	ReasonFuture          = "too_far_in_future"
	ReasonTooOld          = "too_old"
	ReasonOutOfOrder      = "out_of_order"
	ReasonDuplicate       = "duplicate"
	ReasonInvalidLabels   = "invalid_labels"
	ReasonSeriesLimit     = "series_limit"
	ReasonStorage         = "storage_error"
	ReasonBodyTooLarge    = "body_too_large"
	ReasonBodyRead        = "body_read_error"
	ReasonOther           = "other"
)

const (
	defaultMaxBodyBytes = 64 << 20
	defaultBatchSamples = 10_000
	defaultMaxReported  = 10
)

func (o Options) withDefaults() Options {
	o.MaxBodyBytes = positive.Or(o.MaxBodyBytes, defaultMaxBodyBytes)
	o.BatchSamples = positive.Or(o.BatchSamples, defaultBatchSamples)
	o.SeriesCache = positive.Or(o.SeriesCache, 1<<22)
	o.MaxReported = positive.Or(o.MaxReported, defaultMaxReported)
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// appendErrors are the Append errors that have a reason of their own, in
// the order appendReason tries them (the retention errors wrap
// storage.ErrOutOfBounds, so they come first).
var appendErrors = []struct {
	err    error
	reason string
}{
	{tsdb.ErrTooOldForRetention, ReasonRetention},
	{tsdb.ErrTooFarInFuture, ReasonFuture},
	{storage.ErrOutOfBounds, ReasonOutOfBounds},
	{storage.ErrTooOldSample, ReasonTooOld},
	{storage.ErrOutOfOrderSample, ReasonOutOfOrder},
	{storage.ErrDuplicateSampleForTimestamp, ReasonDuplicate},
	{head.ErrInvalidLabels, ReasonInvalidLabels},
	{head.ErrSeriesLimit, ReasonSeriesLimit},
}

// appendReason maps an Append error to a short, bounded reason.
func appendReason(err error) string {
	for _, e := range appendErrors {
		if errors.Is(err, e.err) {
			return e.reason
		}
	}
	return ReasonOther
}

// ExampleReason tells which of the reasons of an answer (reasons, in the
// answer's order) an example's text is about: the only one, or the one
// whose Append error the text names, or else the first.
func ExampleReason(text string, reasons []string) string {
	if len(reasons) == 1 {
		return reasons[0]
	}
	for _, e := range appendErrors {
		if strings.Contains(text, e.err.Error()) && slices.Contains(reasons, e.reason) {
			return e.reason
		}
	}
	if len(reasons) > 0 {
		return reasons[0]
	}
	return ReasonOther
}
