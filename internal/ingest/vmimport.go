package ingest

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

	"github.com/aerie-db/aerie/internal/head"
	"github.com/aerie-db/aerie/internal/tsdb"
	"github.com/aerie-db/aerie/internal/vmformat"
)

// Protocols of the VictoriaMetrics-format imports, passed to
// Options.Metrics.
const (
	ProtocolImportJSON = "import_json"
	ProtocolImportCSV  = "import_csv"
)

// NewVMImportHandler serves VictoriaMetrics' /api/v1/import: JSON lines,
// one series chunk per line (internal/vmformat), gzip if Content-Encoding
// says so. extra_label=name=value query parameters are set on every
// series. Lines are read one at a time, each at most lim.MaxLineBytes
// long, so a body needs memory for one line and one batch. Over the
// engine (tsdb.DB), a line of history (historyRuns) goes straight into
// blocks as a history run, committed with the last batch. It answers 204
// when every sample was stored; otherwise as the other handlers do (see
// the package doc), naming the first bad lines with their byte offsets.
func NewVMImportHandler(app storage.Appendable, opts Options, lim vmformat.Limits) http.Handler {
	return &vmImportHandler{app: app, opts: opts.withDefaults(), lim: lim.WithDefaults()}
}

// NewCSVImportHandler serves VictoriaMetrics' /api/v1/import/csv: CSV rows
// read by the column spec in the format query parameter (see
// vmformat.ParseCSVFormat), e.g.
// ?format=1:time:unix_ms,2:label:host,3:metric:cpu. Rows without a time
// column get the time the request was received; extra_label works as for
// /api/v1/import.
func NewCSVImportHandler(app storage.Appendable, opts Options, lim vmformat.Limits) http.Handler {
	return &vmImportHandler{app: app, opts: opts.withDefaults(), lim: lim.WithDefaults(), csv: true}
}

type vmImportHandler struct {
	app  storage.Appendable
	opts Options
	lim  vmformat.Limits
	csv  bool
}

// vmLines reads VictoriaMetrics JSON lines or CSV records line by line,
// for the import handlers and for ReadJSONLines and ReadCSV: one
// implementation of which samples a line gives and how a bad one counts.
type vmLines struct {
	json *vmformat.JSONDecoder // one of json and csv is set
	csv  *vmformat.CSVDecoder

	extra []labels.Label // set on every series (extra_label)
	lb    *labels.Builder
	// run, if set, may take a JSON line's samples as a history run; it
	// reports whether it did (then they are not added).
	run func(lset labels.Labels, ts []int64, vs []float64) bool
}

// vmDecoder is what the two decoders have in common.
type vmDecoder interface {
	Next() bool
	LineErr() error
	Line() int64
	Err() error
}

func (v *vmLines) decoder() vmDecoder {
	if v.csv != nil {
		return v.csv
	}
	return v.json
}

// Err returns the error that ended the input (see the decoders' Err),
// valid once read returned nil.
func (v *vmLines) Err() error { return v.decoder().Err() }

func (v *vmLines) withExtra(l labels.Labels) labels.Labels {
	if len(v.extra) == 0 {
		return l
	}
	if v.lb == nil {
		v.lb = labels.NewBuilder(labels.EmptyLabels())
	}
	v.lb.Reset(l)
	for _, e := range v.extra {
		v.lb.Set(e.Name, e.Value)
	}
	return v.lb.Labels()
}

// read reads to the end of the input, or until lineDone fails: every
// sample of a good line goes to add, then lineDone is called; a bad line
// goes to reject and counts as one sample, since its samples are unknown.
// It returns lineDone's error; what ended the input is v.Err().
func (v *vmLines) read(add func(l labels.Labels, t int64, val float64, line int64), reject func(line int64, err error), lineDone func() error) error {
	dec := v.decoder()
	for dec.Next() {
		line := dec.Line()
		if err := dec.LineErr(); err != nil {
			reject(line, err)
			continue
		}
		if v.csv != nil {
			for _, s := range v.csv.Samples() {
				add(v.withExtra(s.Labels), s.T, s.V, line)
			}
		} else {
			s := v.json.Series()
			lset := v.withExtra(s.Labels)
			if v.run == nil || !v.run(lset, s.Timestamps, s.Values) {
				for i, t := range s.Timestamps {
					add(lset, t, s.Values[i], line)
				}
			}
		}
		if err := lineDone(); err != nil {
			return err
		}
	}
	return nil
}

func (h *vmImportHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		w.Header().Set("Allow", "POST, PUT")
		writeError(w, http.StatusMethodNotAllowed, codeMethod, "imports must be POST or PUT")
		return
	}
	q := r.URL.Query()
	extra, err := parseExtraLabels(q["extra_label"])
	if err != nil {
		writeError(w, http.StatusBadRequest, codeInvalid, err.Error())
		return
	}
	var format *vmformat.CSVFormat
	protocol := ProtocolImportJSON
	if h.csv {
		protocol = ProtocolImportCSV
		spec := q.Get("format")
		if spec == "" {
			writeError(w, http.StatusBadRequest, codeInvalid, "missing format parameter: give the columns, e.g. format=1:time:unix_ms,2:label:host,3:metric:cpu")
			return
		}
		if format, err = vmformat.ParseCSVFormat(spec); err != nil {
			writeError(w, http.StatusBadRequest, codeInvalid, err.Error())
			return
		}
	}
	body, closeBody, herr := openBody(r, h.opts.MaxBodyBytes)
	if herr != nil {
		writeError(w, herr.status, herr.code, herr.msg)
		return
	}
	defer closeBody()

	rep := newReport(h.opts.MaxReported)
	b := newBatch(r.Context(), h.app, h.opts.BatchSamples, rep)
	defer b.release()
	lines := &vmLines{extra: extra}
	if h.csv {
		lines.csv = vmformat.NewCSVDecoder(body, format, h.lim, h.opts.Now().UnixMilli())
		if err := lines.csv.Err(); err != nil { // a format the limits refuse
			writeError(w, http.StatusBadRequest, codeInvalid, err.Error())
			return
		}
	} else {
		lines.json = vmformat.NewJSONDecoder(body, h.lim)
	}
	var runs *historyRuns
	if rs, ok := h.app.(runSource); ok && !h.csv {
		runs = &historyRuns{src: rs, ctx: r.Context()}
		lines.run = runs.take
		defer runs.abort()
	}
	commitErr := lines.read(b.add, func(line int64, err error) {
		rep.reject(ReasonParse, 1, line, err.Error)
	}, b.lineDone)
	var readErr error
	if commitErr == nil {
		readErr = lines.Err()
		// Lines read in full before a read error are good: store them.
		commitErr = b.commit()
	}
	if err := b.sync(); commitErr == nil {
		commitErr = err
	}
	if runs != nil && commitErr == nil {
		n, err := runs.commit()
		if err != nil {
			rep.reject(ReasonStorage, runs.n, 0, func() string {
				return fmt.Sprintf("history runs of %d samples failed: %v", runs.n, err)
			})
			commitErr = err
		}
		rep.stored += int(n)
	}
	var re *vmformat.ReadError
	if errors.As(readErr, &re) && re.Partial {
		reason := ReasonBodyRead
		if isTooLarge(readErr) {
			reason = ReasonBodyTooLarge
		}
		rep.reject(reason, 1, re.Line, func() string {
			return fmt.Sprintf("%s (byte %d): the line was cut off and dropped", where(re.Line, 0, 0), re.Offset)
		})
	}
	if re != nil {
		readErr = re.Err // respond names the limit or the read failure itself
	}
	respond(w, &h.opts, protocol, rep, readErr, commitErr)
}

// runSource gives history run writers: the engine (tsdb.DB).
type runSource interface {
	NewRunWriter(ctx context.Context) (*tsdb.RunWriter, error)
	RunBound() int64
	TimeBounds() (mint, maxt int64)
}

// minRunSamples is the least samples of a line that go into a history run:
// fewer are not worth a block extent of their own.
const minRunSamples = 64

// historyRuns writes the lines of one /api/v1/import request that are
// history as runs (tsdb.RunWriter): a series' samples strictly increasing
// in time, at least minRunSamples of them, all older than the head's
// partitions and inside the retention, and the series' first line in the
// request, or its next after a run (see take). They are committed with
// the request's last batch; until then nothing of them is visible, and a
// failed request removes them. Other lines go through the appender as
// before. Where a series' run and its
// samples from elsewhere in the request share a timestamp, the run's
// value is kept.
type historyRuns struct {
	src         runSource
	ctx         context.Context
	w           *tsdb.RunWriter // made at the first run
	bound       int64           // RunBound, read once
	oldest      int64
	boundRead   bool
	n           int             // samples given to w
	cur         labels.Labels   // the series w took last
	curLast     int64           // and its last sample's time
	notRunnable map[uint64]bool // series that went through the appender
}

// take writes a line's samples as a run if it can (see historyRuns). A
// line of the series the run wrote last, after its last sample, continues
// that run, whatever its length: VictoriaMetrics' export gives a long
// series as many lines in time order.
func (h *historyRuns) take(lset labels.Labels, ts []int64, vs []float64) bool {
	if len(ts) == 0 {
		return false
	}
	cont := h.w != nil && ts[0] > h.curLast && labels.Equal(lset, h.cur)
	if !cont && len(ts) < minRunSamples {
		h.appended(lset)
		return false
	}
	if !h.boundRead {
		h.bound, h.boundRead = h.src.RunBound(), true
		h.oldest, _ = h.src.TimeBounds()
	}
	ok := ts[len(ts)-1] < h.bound
	if ok && !cont {
		ok = ts[0] >= h.oldest && !h.notRunnable[lset.Hash()] && head.ValidateLabels(lset) == nil && (h.w == nil || !h.w.Has(lset))
	}
	for i := 1; ok && i < len(ts); i++ {
		ok = ts[i] > ts[i-1]
	}
	if !ok {
		if !cont {
			h.appended(lset)
		}
		return false
	}
	if h.w == nil {
		w, err := h.src.NewRunWriter(h.ctx)
		if err != nil {
			h.appended(lset)
			return false
		}
		h.w = w
	}
	if !cont {
		if err := h.w.Series(lset); err != nil {
			return false // sticky: commit reports it
		}
		h.cur = lset.Copy() // the decoder's may be reused
	}
	for i, t := range ts {
		if h.w.Add(t, vs[i]) != nil {
			break // sticky: commit reports it
		}
	}
	h.curLast = ts[len(ts)-1]
	h.n += len(ts)
	return true
}

// appended notes a series whose samples went through the appender: a
// later line of it does too, so its samples stay in one place.
func (h *historyRuns) appended(lset labels.Labels) {
	if h.notRunnable == nil {
		h.notRunnable = map[uint64]bool{}
	}
	h.notRunnable[lset.Hash()] = true
}

// commit makes the runs durable and visible; it returns the samples stored.
func (h *historyRuns) commit() (int64, error) {
	if h.w == nil {
		return 0, nil
	}
	w := h.w
	h.w = nil
	return w.Commit()
}

// abort removes runs not committed.
func (h *historyRuns) abort() {
	if h.w != nil {
		h.w.Abort()
		h.w = nil
	}
}
