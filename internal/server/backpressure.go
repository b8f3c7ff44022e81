package server

import (
	"fmt"
	"net/http"
)

// writeLimiter answers 503 with Retry-After once max write requests are in
// flight. Writes wait on the WAL's fsync before they are acknowledged; when
// the disk cannot keep up, requests pile up here, and shedding them with a
// retryable status makes Prometheus' remote-write queue and Telegraf back
// off instead of timing out (and resending) while holding memory.
type writeLimiter struct {
	sem chan struct{}
}

func newWriteLimiter(max int) *writeLimiter {
	return &writeLimiter{sem: make(chan struct{}, max)}
}

func (l *writeLimiter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost && r.Method != http.MethodPut {
			h.ServeHTTP(w, r)
			return
		}
		select {
		case l.sem <- struct{}{}:
			defer func() { <-l.sem }()
			h.ServeHTTP(w, r)
		default:
			w.Header().Set("Retry-After", "1")
			http.Error(w, fmt.Sprintf("too many writes in flight (%d): the WAL is not keeping up; retry later", cap(l.sem)), http.StatusServiceUnavailable)
		}
	})
}
