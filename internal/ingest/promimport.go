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
		ct:    ct,
		now:   h.opts.Now().UnixMilli(),
		extra: extra,
		b:     newBatch(r.Context(), h.app, h.opts.BatchSamples, rep),
		rep:   rep,
		meta:  map[string]metadata.Metadata{},
	}
	defer pi.b.release()
	pi.setBody(body)
	commitErr := pi.run()
	if commitErr == nil {
		commitErr = pi.b.commit()
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

// promImport ingests one body. textparse reports errors without a
// position and cannot go on after one, so promImport tracks the line of
// every entry itself (each entry is one line, except that a quoted label
// in the text format may hold newlines: the series bytes tell where it
// ends) and, after an error, starts a new parser on the next line.
type promImport struct {
	ct    string
	now   int64
	extra []labels.Label
	b     *batch
	rep   *report
	meta  map[string]metadata.Metadata

	body     []byte
	badLines map[int64]bool // already reported (NUL bytes)
}

// setBody normalizes line ends to "\n", ends a text body with a newline,
// and blanks lines holding a NUL byte (the text lexer would take it for
// the end of input), reporting them.
func (pi *promImport) setBody(body []byte) {
	if bytes.Contains(body, []byte("\r\n")) {
		body = bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n"))
	}
	if pi.ct == ctText && len(body) > 0 && body[len(body)-1] != '\n' {
		body = append(body, '\n')
	}
	for i := bytes.IndexByte(body, 0); i >= 0; {
		start := bytes.LastIndexByte(body[:i], '\n') + 1
		end := pi.lineEnd(body, start)
		line := int64(bytes.Count(body[:start], []byte("\n"))) + 1
		pi.rep.reject(ReasonParse, 1, line, func() string {
			return fmt.Sprintf("%s: line holds a NUL byte", where(line, i-start+1, int64(i)))
		})
		if pi.badLines == nil {
			pi.badLines = map[int64]bool{}
		}
		pi.badLines[line] = true
		for j := start; j < end; j++ {
			if body[j] != '\n' {
				body[j] = ' '
			}
		}
		next := bytes.IndexByte(body[end:], 0)
		if next < 0 {
			break
		}
		i = end + next
	}
	// The text parser appends to its input: with no room left it would
	// parse a copy, and the series it returns would not be subslices of
	// body, which the line count after a multi-line label needs.
	pi.body = slices.Grow(body, 1)
}

// lineEnd is the offset just after the line that starts at off.
func (pi *promImport) lineEnd(body []byte, off int) int {
	if i := bytes.IndexByte(body[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(body)
}

// blank reports whether the line at off holds only spaces and tabs (the
// text format skips such lines; OpenMetrics refuses them).
func (pi *promImport) blank(off int) bool {
	for _, c := range pi.body[off:] {
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

// run parses the body, restarting after each bad line. It returns only a
// Commit error.
func (pi *promImport) run() error {
	st := labels.NewSymbolTable()
	body := pi.body
	off, lineNo := 0, int64(1)
	for off < len(body) {
		buf := body[off:]
		p, err := textparse.New(buf, pi.ct, st, textparse.ParserOptions{})
		if p == nil {
			return fmt.Errorf("no parser for %s: %w", pi.ct, err) // cannot happen: ct is known
		}
		cur, line := off, lineNo // where the next entry starts
		for {
			if pi.ct == ctText {
				for cur < len(body) && pi.blank(cur) {
					cur, line = pi.lineEnd(body, cur), line+1
				}
			}
			e, err := p.Next()
			if err == io.EOF {
				pi.checkRest(cur, line)
				return nil
			}
			if err != nil {
				pi.parseError(cur, line, err)
				if cur >= len(body) || err.Error() == "unexpected data after # EOF" {
					return nil
				}
				off, lineNo = pi.lineEnd(body, cur), line+1
				break
			}
			var lset labels.Labels
			if e == textparse.EntrySeries {
				// textparse can panic on some malformed input (found by
				// FuzzPromImportHandler); that is a bad line, not a crash.
				if perr := seriesLabels(p, &lset); perr != nil {
					pi.parseError(cur, line, perr)
					off, lineNo = pi.lineEnd(body, cur), line+1
					break
				}
			}
			next, nextLine := pi.lineEnd(body, cur), line+1
			switch e {
			case textparse.EntrySeries:
				series, ts, v := p.Series()
				if end, ok := subsliceEnd(buf, series); ok && off+end > cur {
					// A quoted label may span lines: the entry ends on the
					// line of the series' end.
					nl := bytes.Count(body[cur:off+end], []byte("\n"))
					next, nextLine = pi.lineEnd(body, off+end), line+1+int64(nl)
				}
				if len(pi.extra) > 0 {
					lb := labels.NewBuilder(lset)
					for _, l := range pi.extra {
						lb.Set(l.Name, l.Value)
					}
					lset = lb.Labels()
				}
				t := pi.now
				if ts != nil {
					t = *ts
				}
				pi.b.add(lset, t, v, line)
			case textparse.EntryHistogram:
				l := line
				pi.rep.reject(ReasonNativeHistogram, 1, l, func() string {
					return fmt.Sprintf("%s: native histograms are not supported", where(l, 0, 0))
				})
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
			cur, line = next, nextLine
			if err := pi.b.lineDone(); err != nil {
				return err
			}
		}
	}
	return nil
}

// parseError reports a bad line, unless it was reported already.
func (pi *promImport) parseError(off int, line int64, err error) {
	if pi.badLines[line] {
		return
	}
	pi.rep.reject(ReasonParse, 1, line, func() string {
		if off >= len(pi.body) {
			return fmt.Sprintf("%s (end of body): %v", where(line, 0, 0), err)
		}
		return fmt.Sprintf("%s: %v", where(line, 0, 0), err)
	})
}

// checkRest reports lines left after the parser's end of input, which
// should not exist (NUL bytes were blanked): never drop data silently.
func (pi *promImport) checkRest(off int, line int64) {
	if pi.ct != ctText {
		return
	}
	for ; off < len(pi.body); off, line = pi.lineEnd(pi.body, off), line+1 {
		if !pi.blank(off) {
			pi.parseError(off, line, fmt.Errorf("parser stopped before this line"))
			return
		}
	}
}

// updateMeta merges one metadata entry into what the body said so far
// about the metric and records the result.
func (pi *promImport) updateMeta(name []byte, set func(*metadata.Metadata)) {
	m := pi.meta[string(name)]
	set(&m)
	pi.meta[string(name)] = m
	pi.b.metadata(string(name), m)
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
