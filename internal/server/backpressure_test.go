package server

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteLimiter(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release // a commit waiting on a slow fsync
		w.WriteHeader(http.StatusNoContent)
	})
	h := newWriteLimiter(2).wrap(slow)
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range codes {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/write", nil))
			codes[i] = rec.Code
		}(i)
	}
	<-entered
	<-entered
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/write", nil))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Equal(t, "1", rec.Header().Get("Retry-After"))
	require.Contains(t, rec.Body.String(), "WAL is not keeping up")
	close(release)
	wg.Wait()
	require.Equal(t, []int{204, 204}, codes)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/write", nil))
	require.Equal(t, http.StatusNoContent, rec.Code, "capacity is back")
}
