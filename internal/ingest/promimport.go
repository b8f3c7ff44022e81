package ingest

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/storage"
)

// NewPromImportHandler serves VictoriaMetrics' /api/v1/import/prometheus:
// a body in the Prometheus text exposition format, or OpenMetrics if the
// Content-Type is application/openmetrics-text. Samples without a
// timestamp get the receipt time; extra_label=name=value query parameters
// are set on every series (overriding a label of the same name); # TYPE,
// # HELP and # UNIT go to the appender's UpdateMetadata. It answers 204
// when every sample was stored.
func NewPromImportHandler(app storage.Appendable, opts Options) http.Handler {
	return &promImportHandler{app: app, opts: opts.withDefaults()}
}

type promImportHandler struct {
	app  storage.Appendable
	opts Options
}

const (
	ctText        = "text/plain"
	ctOpenMetrics = "application/openmetrics-text"
)

func (h *promImportHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost && r.Method != http.MethodPut {
		w.Header().Set("Allow", "POST, PUT")
		writeError(w, http.StatusMethodNotAllowed, codeMethod, "imports must be POST or PUT")
		return
	}
	extra, err := parseExtraLabels(r.URL.Query()["extra_label"])
	if err != nil {
		writeError(w, http.StatusBadRequest, codeInvalid, err.Error())
		return
	}
	body, herr := readBody(r, h.opts.MaxBodyBytes)
	if herr != nil {
		writeError(w, herr.status, herr.code, herr.msg)
		return
	}
	ct := ctText
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil && mt == ctOpenMetrics {
		ct = ctOpenMetrics
	}
	rep := newReport(h.opts.MaxReported)
	pi := &promImport{
		extra: extra,
		b:     newBatch(r.Context(), h.app, h.opts.BatchSamples, rep),
		rep:   rep,
		meta:  map[string]metadata.Metadata{},
	}
	pi.parser = expoParser{ct: ct, now: h.opts.Now().UnixMilli(), end: "body", sink: pi}
	defer pi.b.release()
	pi.setBody(body)
	commitErr := pi.run()
	if commitErr == nil {
		commitErr = pi.b.commit()
	}
	if err := pi.b.sync(); commitErr == nil {
		commitErr = err
	}
	respond(w, &h.opts, ProtocolPromImport, rep, nil, commitErr)
}

func parseExtraLabels(params []string) ([]labels.Label, error) {
	var out []labels.Label
	for _, p := range params {
		name, value, ok := strings.Cut(p, "=")
		if !ok || !model.UTF8Validation.IsValidLabelName(name) {
			return nil, fmt.Errorf("invalid extra_label %q: want name=value with a valid label name", p)
		}
		out = append(out, labels.Label{Name: name, Value: value})
	}
	return out, nil
}

// promImport ingests one body for the handler.
type promImport struct {
	parser expoParser
	extra  []labels.Label
	b      *batch
	rep    *report
	meta   map[string]metadata.Metadata
	body   []byte
}

// setBody normalizes the body and blanks its lines holding a NUL byte,
// reporting them.
func (pi *promImport) setBody(body []byte) {
	pi.parser.blankNUL(body, 1, 0) // first: its offsets are the body's
	body = pi.parser.normalize(body)
	pi.body = body
}

// run parses the body. It returns only a Commit error.
func (pi *promImport) run() error {
	_, err := pi.parser.parse(pi.body, 1)
	return err
}

func (pi *promImport) addSample(lset labels.Labels, t int64, v float64, line int64) {
	if len(pi.extra) > 0 {
		lb := labels.NewBuilder(lset)
		for _, l := range pi.extra {
			lb.Set(l.Name, l.Value)
		}
		lset = lb.Labels()
	}
	pi.b.add(lset, t, v, line)
}

func (pi *promImport) addMeta(e textparse.Entry, p textparse.Parser) {
	switch e {
	case textparse.EntryType:
		name, typ := p.Type()
		pi.updateMeta(name, func(m *metadata.Metadata) { m.Type = typ })
	case textparse.EntryHelp:
		name, help := p.Help()
		pi.updateMeta(name, func(m *metadata.Metadata) { m.Help = string(help) })
	case textparse.EntryUnit:
		name, unit := p.Unit()
		pi.updateMeta(name, func(m *metadata.Metadata) { m.Unit = string(unit) })
	}
}

func (pi *promImport) rejectLine(reason string, line int64, msg func() string) {
	pi.rep.reject(reason, 1, line, msg)
}

func (pi *promImport) lineDone() error { return pi.b.lineDone() }

// updateMeta merges one metadata entry into what the body said so far
// about the metric and records the result.
func (pi *promImport) updateMeta(name []byte, set func(*metadata.Metadata)) {
	m := pi.meta[string(name)]
	set(&m)
	pi.meta[string(name)] = m
	pi.b.metadata(string(name), m)
}

// expoParser parses the Prometheus text format or OpenMetrics for the
// handler (promImport, a whole body) and ReadExposition (expoReader, a
// chunk at a time). textparse reports errors without a position and
// cannot go on after one, so expoParser tracks the line of every entry
// itself (each entry is one line, except that a quoted label in the text
// format may hold newlines: the series bytes tell where it ends) and,
// after an error, starts a new parser on the next line.
type expoParser struct {
	ct   string
	now  int64  // the time of samples without a timestamp
	end  string // what messages call the end of the input: "body", "input"
	sink expoSink
	bad  map[int64]bool // lines reported already (NUL bytes)
}

// expoSink takes what an expoParser reads.
type expoSink interface {
	addSample(lset labels.Labels, t int64, v float64, line int64)
	addMeta(e textparse.Entry, p textparse.Parser) // # TYPE, # HELP, # UNIT
	rejectLine(reason string, line int64, msg func() string)
	lineDone() error // after every good entry; an error stops the parse
}

// expoEnd says how a parse ended: at the parser's end of input (eof), at
// data after an OpenMetrics "# EOF" (afterEOF), or else at the end of the
// body.
type expoEnd struct {
	eof, afterEOF bool
}

// normalize turns line ends into "\n" and ends a text body with one.
func (x *expoParser) normalize(body []byte) []byte {
	if bytes.Contains(body, []byte("\r\n")) {
		body = bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n"))
	}
	if x.ct == ctText && len(body) > 0 && body[len(body)-1] != '\n' {
		body = append(body, '\n')
	}
	return body
}

// blankNUL blanks the lines of body that hold a NUL byte (the text lexer
// would take it for the end of input) and reports them. body's first line
// is line first and its first byte is byte base of the input.
func (x *expoParser) blankNUL(body []byte, first, base int64) {
	for i := bytes.IndexByte(body, 0); i >= 0; {
		start := bytes.LastIndexByte(body[:i], '\n') + 1
		end := len(body)
		if j := bytes.IndexByte(body[i:], '\n'); j >= 0 {
			end = i + j
		}
		line := first + int64(bytes.Count(body[:start], []byte("\n")))
		col, at := i-start+1, base+int64(i)
		x.sink.rejectLine(ReasonParse, line, func() string {
			return fmt.Sprintf("%s: line holds a NUL byte", where(line, col, at))
		})
		if x.bad == nil {
			x.bad = map[int64]bool{}
		}
		x.bad[line] = true
		for j := start; j < end; j++ {
			body[j] = ' '
		}
		next := bytes.IndexByte(body[end:], 0)
		if next < 0 {
			break
		}
		i = end + next
	}
}

// parse reads body, whose first line is line first, restarting after
// each bad line. Its error is lineDone's.
func (x *expoParser) parse(body []byte, first int64) (expoEnd, error) {
	// The text parser appends to its input: with no room left it would
	// parse a copy, and the series it returns would not be subslices of
	// body, which the line count after a multi-line label needs.
	body = slices.Grow(body, 1)
	st := labels.NewSymbolTable()
	off, lineNo := 0, first
restart:
	for off < len(body) {
		buf := body[off:]
		p, err := textparse.New(buf, x.ct, st, textparse.ParserOptions{})
		if p == nil {
			return expoEnd{}, fmt.Errorf("no parser for %s: %w", x.ct, err) // cannot happen: ct is known
		}
		cur, line := off, lineNo // where the next entry starts
		for {
			if x.ct == ctText {
				for cur < len(body) && blankLine(body, cur) {
					cur, line = lineEnd(body, cur), line+1
				}
			}
			e, err := p.Next()
			if err == io.EOF {
				x.checkRest(body, cur, line)
				return expoEnd{eof: true}, nil
			}
			if err != nil {
				x.parseError(body, cur, line, err)
				afterEOF := err.Error() == "unexpected data after # EOF"
				if cur >= len(body) || afterEOF {
					return expoEnd{afterEOF: afterEOF}, nil
				}
				off, lineNo = lineEnd(body, cur), line+1
				continue restart
			}
			next, nextLine := lineEnd(body, cur), line+1
			switch e {
			case textparse.EntrySeries:
				// textparse can panic on some malformed input (found by
				// FuzzPromImportHandler); that is a bad line, not a crash.
				var lset labels.Labels
				if perr := seriesLabels(p, &lset); perr != nil {
					x.parseError(body, cur, line, perr)
					off, lineNo = next, nextLine
					continue restart
				}
				series, ts, v := p.Series()
				if end, ok := subsliceEnd(buf, series); ok && off+end > cur {
					// A quoted label may span lines: the entry ends on the
					// line of the series' end.
					nl := bytes.Count(body[cur:off+end], []byte("\n"))
					next, nextLine = lineEnd(body, off+end), line+1+int64(nl)
				}
				t := x.now
				if ts != nil {
					t = *ts
				}
				x.sink.addSample(lset, t, v, line)
			case textparse.EntryHistogram:
				l := line
				x.sink.rejectLine(ReasonNativeHistogram, l, func() string {
					return fmt.Sprintf("%s: native histograms are not supported", where(l, 0, 0))
				})
			case textparse.EntryType, textparse.EntryHelp, textparse.EntryUnit:
				x.sink.addMeta(e, p)
			}
			cur, line = next, nextLine
			if err := x.sink.lineDone(); err != nil {
				return expoEnd{}, err
			}
		}
	}
	return expoEnd{}, nil
}

// checkRest reports the first line left after the text parser's end of
// input, which should not exist (NUL bytes were blanked) but does when
// the parser and the line count disagree about where an entry ended:
// never drop data silently. body's byte off starts line line.
func (x *expoParser) checkRest(body []byte, off int, line int64) {
	if x.ct != ctText {
		return
	}
	for ; off < len(body); off, line = lineEnd(body, off), line+1 {
		if !blankLine(body, off) {
			x.parseError(body, off, line, fmt.Errorf("parser stopped before this line"))
			return
		}
	}
}

// parseError reports a bad line, unless it was reported already.
func (x *expoParser) parseError(body []byte, off int, line int64, err error) {
	if x.bad[line] {
		return
	}
	x.sink.rejectLine(ReasonParse, line, func() string {
		if off >= len(body) {
			return fmt.Sprintf("%s (end of %s): %v", where(line, 0, 0), x.end, err)
		}
		return fmt.Sprintf("%s: %v", where(line, 0, 0), err)
	})
}

// lineEnd is the offset just after the line that starts at off.
func lineEnd(body []byte, off int) int {
	if i := bytes.IndexByte(body[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(body)
}

// blankLine reports whether the line at off holds only spaces and tabs
// (the text format skips such lines; OpenMetrics refuses them).
func blankLine(body []byte, off int) bool {
	for _, c := range body[off:] {
		switch c {
		case ' ', '\t':
		case '\n':
			return true
		default:
			return false
		}
	}
	return true
}

// subsliceEnd returns the offset in buf just after s, if s is a part of
// buf (textparse returns the series as a slice of its input).
func subsliceEnd(buf, s []byte) (int, bool) {
	if len(s) == 0 {
		return 0, false
	}
	start := cap(buf) - cap(s)
	if start < 0 || start+len(s) > len(buf) || &buf[start] != &s[0] {
		return 0, false
	}
	return start + len(s), true
}

// seriesLabels reads the current series' labels, turning a parser panic
// into an error.
func seriesLabels(p textparse.Parser, l *labels.Labels) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed series: %v", r)
		}
	}()
	p.Labels(l)
	return nil
}
