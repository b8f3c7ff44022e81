package importer

import (
	"fmt"
	"io"
)

// summary counts what an import stored and refused, by reason, with the
// first bad line of each reason.
type summary struct {
	stored   int
	reasons  []string // in first-seen order
	byReason map[string]*reasonCount
}

type reasonCount struct {
	n       int
	skipped bool
	file    int // of the first bad line: lowest file, then line; -1: none known
	line    int64
	msg     string
}

func newSummary() *summary {
	return &summary{byReason: map[string]*reasonCount{}}
}

// reject counts n samples refused for reason; file -1 if the line is not
// known.
func (s *summary) reject(reason string, n int, skipped bool, file int, line int64, msg string) {
	rc := s.byReason[reason]
	if rc == nil {
		rc = &reasonCount{skipped: skipped, file: -1}
		s.byReason[reason] = rc
		s.reasons = append(s.reasons, reason)
	}
	rc.n += n
	if file >= 0 && (rc.file < 0 || file < rc.file || file == rc.file && line < rc.line) {
		rc.file, rc.line, rc.msg = file, line, msg
	}
	if rc.file < 0 && rc.msg == "" {
		rc.msg = msg
	}
}

// failed is the number of samples rejected (not skipped).
func (s *summary) failed() int {
	n := 0
	for _, rc := range s.byReason {
		if !rc.skipped {
			n += rc.n
		}
	}
	return n
}

func (s *summary) print(w io.Writer, files []string) {
	skipped := 0
	for _, rc := range s.byReason {
		if rc.skipped {
			skipped += rc.n
		}
	}
	fmt.Fprintf(w, "stored %d samples, rejected %d", s.stored, s.failed())
	if skipped > 0 {
		fmt.Fprintf(w, ", skipped %d", skipped)
	}
	fmt.Fprintln(w)
	for _, reason := range s.reasons {
		rc := s.byReason[reason]
		what := "rejected"
		if rc.skipped {
			what = "skipped"
		}
		fmt.Fprintf(w, "  %s %s: %d", what, reason, rc.n)
		if rc.file >= 0 {
			fmt.Fprintf(w, "; first at %s:%d: %s", files[rc.file], rc.line, rc.msg)
		} else if rc.msg != "" {
			fmt.Fprintf(w, " (%s)", rc.msg)
		}
		fmt.Fprintln(w)
	}
}
