package ingest

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"

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
// long, so a body needs memory for one line and one batch. It answers 204
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
			for i, t := range s.Timestamps {
				add(lset, t, s.Values[i], line)
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
	commitErr := lines.read(b.add, func(line int64, err error) {
		rep.reject(ReasonParse, 1, line, err.Error)
	}, b.lineDone)
	var readErr error
	if commitErr == nil {
		readErr = lines.Err()
		// Lines read in full before a read error are good: store them.
		commitErr = b.commit()
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
