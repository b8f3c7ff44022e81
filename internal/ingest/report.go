package ingest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// InfluxDB 2.x error codes, used by both handlers.
const (
	codeInvalid     = "invalid"
	codeTooLarge    = "request too large"
	codeUnavailable = "unavailable"
	codeUnsupported = "unsupported media type"
	codeMethod      = "method not allowed"
	codeNotFound    = "not found"
)

// report counts what one request stored and rejected and keeps the first
// few reasons, for the answer and for Options.Metrics.
type report struct {
	maxReported int

	stored   int
	rejected int
	byReason map[string]int
	reasons  []string       // keys of byReason in first-seen order
	examples []example      // at most maxReported
	omitted  int            // problems not in examples
	skipped  map[string]int // by reason: left out without failing the request
}

// example is one reported problem; line orders them (0: not tied to a
// line, shown last).
type example struct {
	line int64
	text string
}

func newReport(maxReported int) *report {
	return &report{maxReported: maxReported, byReason: map[string]int{}}
}

// reject counts n rejected samples for reason; detail (built only if it
// will be shown) says where and why, about line (0 if none).
// skip counts samples left out on purpose (string fields: InfluxDB stores
// them, Aerie stores numbers only). They are exported as rejections by
// reason but do not fail the request, so Telegraf's usual string fields do
// not turn every batch into an error, as with VictoriaMetrics.
func (r *report) skip(reason string, n int) {
	if r.skipped == nil {
		r.skipped = map[string]int{}
	}
	r.skipped[reason] += n
}

func (r *report) reject(reason string, n int, line int64, detail func() string) {
	r.rejected += n
	if _, ok := r.byReason[reason]; !ok {
		r.reasons = append(r.reasons, reason)
	}
	r.byReason[reason] += n
	if len(r.examples) < r.maxReported {
		r.examples = append(r.examples, example{line, detail()})
	} else {
		r.omitted++
	}
}

// message is the answer's text: counts first, then the bad lines.
func (r *report) message() string {
	var b strings.Builder
	fmt.Fprintf(&b, "stored %d samples, rejected %d", r.stored, r.rejected)
	if len(r.reasons) > 0 {
		b.WriteString(" (")
		for i, k := range r.reasons {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s: %d", k, r.byReason[k])
		}
		b.WriteString(")")
	}
	ex := slices.Clone(r.examples)
	slices.SortStableFunc(ex, func(a, b example) int {
		return cmp.Compare(uint64(a.line-1), uint64(b.line-1)) // 0 last
	})
	for i, e := range ex {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(e.text)
	}
	if r.omitted > 0 {
		fmt.Fprintf(&b, "; and %d more", r.omitted)
	}
	return b.String()
}

// Message is what the message of a rejecting answer says, read back by a
// client (`aerie import --url` maps its examples to lines of its files).
type Message struct {
	Stored, Rejected int
	Reasons          []ReasonCount // in the answer's order
	Examples         []Example     // the bad lines the answer names
}

// ReasonCount is the number of samples rejected for a reason.
type ReasonCount struct {
	Reason string
	N      int
}

// Example is one bad line named in a message: its line in the body, what
// was wrong with it, and the timestamp of the sample it is about if the
// text names one ("series @t: error", as a batch writes it).
type Example struct {
	Line int64
	Text string
	T    int64
	HasT bool
}

var (
	countsRe  = regexp.MustCompile(`^stored (\d+) samples, rejected (\d+)(?: \(([^)]*)\))?`)
	exampleRe = regexp.MustCompile(`line (\d+)(?: col \d+ \(byte \d+\))?: `)
	atRe      = regexp.MustCompile(` @(-?\d+): `)
	moreRe    = regexp.MustCompile(`; and \d+ more$`)
)

// ParseMessage reads back what report.message wrote: msg must start with
// the counts ("stored N samples, rejected M (reason: n, …): examples"),
// else it returns false.
func ParseMessage(msg string) (Message, bool) {
	m := countsRe.FindStringSubmatch(msg)
	if m == nil {
		return Message{}, false
	}
	var a Message
	a.Stored, _ = strconv.Atoi(m[1])
	a.Rejected, _ = strconv.Atoi(m[2])
	for _, part := range strings.Split(m[3], ", ") {
		reason, n, ok := strings.Cut(part, ": ")
		if !ok {
			continue
		}
		k, _ := strconv.Atoi(n)
		a.Reasons = append(a.Reasons, ReasonCount{reason, k})
	}
	// The examples: "line N…: text", separated by "; ".
	locs := exampleRe.FindAllStringSubmatchIndex(msg, -1)
	for i, loc := range locs {
		end := len(msg)
		if i+1 < len(locs) {
			end = max(loc[1], locs[i+1][0]-2)
		}
		e := Example{Text: moreRe.ReplaceAllString(msg[loc[1]:end], "")}
		e.Line, _ = strconv.ParseInt(msg[loc[2]:loc[3]], 10, 64)
		if at := atRe.FindStringSubmatch(e.Text); at != nil {
			e.T, _ = strconv.ParseInt(at[1], 10, 64)
			e.HasT = true
		}
		a.Examples = append(a.Examples, e)
	}
	return a, true
}

// flushMetrics hands the counts to the metrics hook.
func (r *report) flushMetrics(protocol string, hook func(protocol, reason string, n int)) {
	if hook == nil {
		return
	}
	if r.stored > 0 {
		hook(protocol, ReasonOK, r.stored)
	}
	for _, k := range r.reasons {
		hook(protocol, k, r.byReason[k])
	}
	for k, n := range r.skipped {
		hook(protocol, k, n)
	}
}

// where names a place in a body: 1-based line, and 1-based column and
// 0-based byte offset when known (col 0 = unknown).
func where(line int64, col int, off int64) string {
	if col <= 0 {
		return "line " + strconv.FormatInt(line, 10)
	}
	return fmt.Sprintf("line %d col %d (byte %d)", line, col, off)
}

// writeError answers with InfluxDB 2.x's error shape.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(ErrorBody{code, msg})
}

// ErrorBody is the JSON body of an error answer, InfluxDB 2.x's shape.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// respond answers a request whose body was read (readErr: a read failure
// that stopped it) and ingested (commitErr: a storage failure that stopped
// it), and hands the counts to the metrics hook.
func respond(w http.ResponseWriter, opts *Options, protocol string, rep *report, readErr, commitErr error) {
	defer rep.flushMetrics(protocol, opts.Metrics)
	switch {
	case commitErr != nil:
		opts.Logger.Error("ingest: storage failure", "protocol", protocol, "err", commitErr, "stored", rep.stored)
		writeError(w, http.StatusServiceUnavailable, codeUnavailable,
			fmt.Sprintf("storage unavailable: %v; samples committed before the failure stay stored; %s", commitErr, rep.message()))
	case isTooLarge(readErr):
		writeError(w, http.StatusRequestEntityTooLarge, codeTooLarge,
			fmt.Sprintf("request body exceeds the limit of %d bytes (on the wire or after decompression); %s", opts.MaxBodyBytes, rep.message()))
	case readErr != nil:
		writeError(w, http.StatusBadRequest, codeInvalid, fmt.Sprintf("reading body: %v; %s", readErr, rep.message()))
	case rep.rejected > 0:
		opts.Logger.Warn("ingest: samples rejected", "protocol", protocol, "stored", rep.stored, "rejected", rep.rejected, "msg", rep.message())
		writeError(w, http.StatusBadRequest, codeInvalid, rep.message())
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}
