package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/aerie-db/aerie/internal/ingest"
	"github.com/aerie-db/aerie/internal/vmformat"
)

// urlSink posts batches of JSON lines to a server's /api/v1/import, one
// line per series of a batch.
type urlSink struct {
	ctx    context.Context
	im     *importer
	url    string
	series map[string]*pendingSeries
	order  []*pendingSeries
	n      int
	body   bytes.Buffer
	line   []byte
	labels labelCache
}

type pendingSeries struct {
	lset  labels.Labels
	ts    []int64
	vs    []float64
	files []int
	lines []int64
}

func newURLSink(ctx context.Context, im *importer) (*urlSink, error) {
	base := strings.TrimRight(im.o.URL, "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("--url %q: want http://host:port", im.o.URL)
	}
	return &urlSink{ctx: ctx, im: im, url: base + "/api/v1/import", series: map[string]*pendingSeries{}}, nil
}

func (s *urlSink) add(r *sortedSample) error {
	p := s.series[string(r.lset)]
	if p == nil {
		p = &pendingSeries{lset: s.labels.get(r.lset)}
		s.series[string(r.lset)] = p
		s.order = append(s.order, p)
	}
	p.ts = append(p.ts, r.t)
	p.vs = append(p.vs, r.v)
	p.files = append(p.files, r.file)
	p.lines = append(p.lines, r.line)
	s.n++
	if s.n >= s.im.o.BatchSamples {
		return s.send()
	}
	return nil
}

func (s *urlSink) finish() error { return s.send() }
func (s *urlSink) abort()        {}

// send posts the pending samples, re-sending after 429, 503 or a network
// error (identical samples sent twice are stored once).
func (s *urlSink) send() error {
	if s.n == 0 {
		return nil
	}
	s.body.Reset()
	zw, _ := gzip.NewWriterLevel(&s.body, gzip.BestSpeed) // the level is valid
	for _, p := range s.order {
		s.line = vmformat.AppendJSONLine(s.line[:0], p.lset, p.ts, p.vs)
		zw.Write(s.line) // into a bytes.Buffer: cannot fail
	}
	zw.Close()
	wait := s.im.o.RetryWait
	var status int
	var answer []byte
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, s.url, bytes.NewReader(s.body.Bytes()))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Content-Encoding", "gzip")
		resp, err := s.im.o.Client.Do(req)
		if err == nil {
			answer, err = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			status = resp.StatusCode
			if err == nil && status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable {
				break
			}
			if ra, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && ra > 0 {
				wait = time.Duration(ra) * time.Second
			}
		}
		if attempt == 5 || s.ctx.Err() != nil {
			if err != nil {
				return fmt.Errorf("post %s: %w", s.url, err)
			}
			return fmt.Errorf("post %s: %d %s", s.url, status, bytes.TrimSpace(answer))
		}
		select {
		case <-time.After(wait):
		case <-s.ctx.Done():
		}
		wait *= 2
	}
	switch {
	case status == http.StatusNoContent || status == http.StatusOK:
		s.im.sum.stored += s.n
	case status == http.StatusBadRequest:
		var a ingest.ErrorBody
		if err := json.Unmarshal(answer, &a); err != nil {
			return fmt.Errorf("post %s: 400 %s", s.url, bytes.TrimSpace(answer))
		}
		if err := s.account(a.Message); err != nil {
			return err
		}
	default:
		return fmt.Errorf("post %s: %d %s (%d samples of this batch not known to be stored)", s.url, status, bytes.TrimSpace(answer), s.n)
	}
	clear(s.series)
	s.order, s.n = s.order[:0], 0
	return nil
}

// account reads the counts and the first bad lines of a 400 answer and
// maps the lines of the body back to lines of the files.
func (s *urlSink) account(msg string) error {
	a, ok := ingest.ParseMessage(msg)
	if !ok {
		return fmt.Errorf("post %s: 400 %s", s.url, msg)
	}
	s.im.sum.stored += a.Stored
	reasons := make([]string, len(a.Reasons))
	for i, rc := range a.Reasons {
		reasons[i] = rc.Reason
	}
	named := map[string]int{}
	for _, e := range a.Examples {
		reason := ingest.ExampleReason(e.Text, reasons)
		file, line := -1, int64(0)
		if e.Line >= 1 && e.Line <= int64(len(s.order)) {
			p := s.order[e.Line-1]
			j := 0
			if e.HasT {
				if k := slices.Index(p.ts, e.T); k >= 0 {
					j = k
				}
			}
			file, line = p.files[j], p.lines[j]
		}
		s.im.sum.reject(reason, 1, false, file, line, e.Text)
		named[reason]++
	}
	total := 0
	for _, rc := range a.Reasons {
		total += rc.N
		if d := rc.N - named[rc.Reason]; d > 0 {
			s.im.sum.reject(rc.Reason, d, false, -1, 0, "refused by the server")
		}
	}
	// The server counts a line it cannot parse as one sample; the line
	// held more.
	if lost := s.n - a.Stored; lost > total {
		s.im.sum.reject(ingest.ReasonParse, lost-total, false, -1, 0, "on lines the server refused")
	}
	return nil
}
