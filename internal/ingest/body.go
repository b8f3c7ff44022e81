package ingest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// errTooLarge is returned by a limitReader that has more than its limit.
var errTooLarge = errors.New("body too large")

// limitReader reads at most max bytes of r and fails with errTooLarge,
// rather than io.EOF, if r holds more.
type limitReader struct {
	r    io.Reader
	left int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// At the limit: the body is too large only if r has more.
		var b [1]byte
		for {
			n, err := l.r.Read(b[:])
			if n > 0 {
				return 0, errTooLarge
			}
			if err != nil {
				return 0, err
			}
		}
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// httpError is an answer that ends a request before its body is parsed.
type httpError struct {
	status int
	code   string // InfluxDB 2.x error code
	msg    string
}

func tooLarge(max int64, what string) *httpError {
	return &httpError{http.StatusRequestEntityTooLarge, codeTooLarge,
		fmt.Sprintf("request body exceeds the limit of %d bytes (on the wire or after decompression)%s", max, what)}
}

// openBody returns the request body, decompressed if Content-Encoding says
// gzip, limited to max bytes on the wire and again after decompression.
// Reads past either limit fail with errTooLarge.
func openBody(r *http.Request, max int64) (io.Reader, func(), *httpError) {
	if r.ContentLength > max {
		return nil, nil, tooLarge(max, fmt.Sprintf(" (Content-Length %d)", r.ContentLength))
	}
	var body io.Reader = &limitReader{r: r.Body, left: max}
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
		return body, func() {}, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(body)
		switch {
		case errors.Is(err, io.EOF):
			return strings.NewReader(""), func() {}, nil // empty body
		case isTooLarge(err):
			return nil, nil, tooLarge(max, "")
		case err != nil:
			return nil, nil, &httpError{http.StatusBadRequest, codeInvalid, fmt.Sprintf("invalid gzip body: %v", err)}
		}
		return &limitReader{r: zr, left: max}, func() { zr.Close() }, nil
	default:
		return nil, nil, &httpError{http.StatusUnsupportedMediaType, codeUnsupported,
			fmt.Sprintf("unsupported Content-Encoding %q: send identity or gzip", enc)}
	}
}

// isTooLarge reports whether err is a body limit: ours, or that of an
// http.MaxBytesReader a server put around the body.
func isTooLarge(err error) bool {
	var mb *http.MaxBytesError
	return errors.Is(err, errTooLarge) || errors.As(err, &mb)
}

// readBody reads a whole body (for parsers that need it in one slice).
func readBody(r *http.Request, max int64) ([]byte, *httpError) {
	body, closeBody, herr := openBody(r, max)
	if herr != nil {
		return nil, herr
	}
	defer closeBody()
	b, err := io.ReadAll(body)
	switch {
	case isTooLarge(err):
		return nil, tooLarge(max, "")
	case err != nil:
		return nil, &httpError{http.StatusBadRequest, codeInvalid, fmt.Sprintf("reading body: %v", err)}
	}
	return b, nil
}
