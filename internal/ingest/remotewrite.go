package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"sync"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/prompb"
	"github.com/prometheus/prometheus/storage"
	"google.golang.org/protobuf/encoding/protowire"
)

// NewRemoteWriteHandler serves Prometheus remote write 1.0 (snappy
// protobuf prometheus.WriteRequest) with the semantics of Prometheus'
// own handler (storage/remote, v0.310), and hands every other request
// (remote write 2.0, other encodings) to fallback, which should be that
// handler.
//
// The difference is speed: the body is decoded in place, without a
// prompb.WriteRequest, and a series whose labels (as written, in the
// order written) were seen before is appended by the ref the storage
// returned for it (refCache), with no label strings built, sorted or
// looked up.
//
// As Prometheus: a series without __name__, with invalid or duplicate
// label names is skipped (logged); the first sample the storage refuses
// rolls the whole request back and answers 400 for out-of-order, out of
// bounds, duplicate or too old samples, 500 otherwise; exemplars are
// dropped (Aerie stores none); 204 otherwise. A request holding native
// histograms is handed to fallback (which refuses them, as Aerie stores
// float samples only), and so is a malformed message, refused by it in
// its words.
func NewRemoteWriteHandler(app storage.Appendable, opts Options, fallback http.Handler) http.Handler {
	opts = opts.withDefaults()
	return &rwHandler{app: app, opts: opts, fallback: fallback, cache: newRefCache[refVal](opts.SeriesCache)}
}

type rwHandler struct {
	app      storage.Appendable
	opts     Options
	fallback http.Handler
	cache    *refCache[refVal]
}

// rwScratch is one request's memory, reused through rwPool.
type rwScratch struct {
	comp   []byte // the body as received
	body   []byte // decompressed
	key    []byte // the current series' label fields as written
	sb     labels.ScratchBuilder
	labels []rwLabel
}

type rwLabel struct{ name, value []byte }

var rwPool = sync.Pool{New: func() any { return &rwScratch{sb: labels.NewScratchBuilder(16)} }}

// errHistograms hands a request to the fallback handler.
var errHistograms = errors.New("native histograms")

func (h *rwHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !isRemoteWrite1(r.Header) {
		h.fallback.ServeHTTP(w, r)
		return
	}
	sc := rwPool.Get().(*rwScratch)
	defer rwPool.Put(sc)
	buf := bytes.NewBuffer(sc.comp[:0])
	if r.ContentLength > 0 && r.ContentLength <= h.opts.MaxBodyBytes {
		buf.Grow(int(r.ContentLength) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(r.Body)
	compressed := buf.Bytes()
	sc.comp = compressed
	if err != nil {
		status := http.StatusBadRequest
		if isTooLarge(err) {
			status = http.StatusRequestEntityTooLarge
		}
		http.Error(w, fmt.Sprintf("read remote write body: %v", err), status)
		return
	}
	n, err := snappy.DecodedLen(compressed)
	switch {
	case err != nil:
		http.Error(w, fmt.Sprintf("snappy: %v", err), http.StatusBadRequest)
		return
	case int64(n) > h.opts.MaxBodyBytes:
		http.Error(w, fmt.Sprintf("remote write body decompresses to %d bytes, more than the limit of %d", n, h.opts.MaxBodyBytes), http.StatusRequestEntityTooLarge)
		return
	}
	sc.body, err = snappy.Decode(sc.body[:cap(sc.body)], compressed)
	if err != nil {
		http.Error(w, fmt.Sprintf("snappy: %v", err), http.StatusBadRequest)
		return
	}
	status, err := h.write(r.Context(), sc)
	var pe protoError
	switch {
	case errors.Is(err, errHistograms), errors.As(err, &pe):
		// Prometheus' handler says what it refuses, in its words.
		r.Body = io.NopCloser(bytes.NewReader(compressed))
		h.fallback.ServeHTTP(w, r)
	case err != nil:
		http.Error(w, err.Error(), status)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
	if cap(sc.body) > 16<<20 || cap(sc.comp) > 16<<20 {
		sc.body, sc.comp = nil, nil // do not pool one huge body
	}
}

// isRemoteWrite1 tells whether the headers are those of a remote write
// 1.0 request (Prometheus' default when a request says nothing).
func isRemoteWrite1(hd http.Header) bool {
	if enc := hd.Get("Content-Encoding"); enc != "" && enc != "snappy" {
		return false
	}
	ct := hd.Get("Content-Type")
	if ct == "" {
		return true
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/x-protobuf" {
		return false
	}
	p, ok := params["proto"]
	return !ok || p == "prometheus.WriteRequest"
}

// write appends the request's samples and commits them; on error it
// rolls back and returns the HTTP status.
func (h *rwHandler) write(ctx context.Context, sc *rwScratch) (status int, err error) {
	app := h.app.Appender(ctx)
	maxTime := h.opts.Now().UnixMilli() + maxAheadMs
	invalid := 0
	err = forEachField(sc.body, func(num protowire.Number, typ protowire.Type, v []byte) error {
		switch num {
		case 1:
			if typ != protowire.BytesType {
				return errWireType
			}
			return h.series(app, sc, v, maxTime, &invalid)
		case 3: // metadata: not stored here, but must decode
			var md prompb.MetricMetadata
			if typ != protowire.BytesType || md.Unmarshal(v) != nil {
				return errWireType
			}
		}
		return nil // unknown fields are skipped
	})
	if err != nil {
		_ = app.Rollback()
		var pe protoError
		switch {
		case errors.As(err, &pe), errors.Is(err, errHistograms):
			return 0, err
		case !decodes(sc.body):
			// The request stopped at a sample or series before a later
			// part that does not decode: Prometheus decodes the whole
			// request first and refuses it for that.
			return 0, protoError{err}
		case errors.Is(err, storage.ErrOutOfOrderSample), errors.Is(err, storage.ErrOutOfBounds),
			errors.Is(err, storage.ErrDuplicateSampleForTimestamp), errors.Is(err, storage.ErrTooOldSample):
			return http.StatusBadRequest, err
		}
		return http.StatusInternalServerError, err
	}
	if invalid > 0 {
		h.opts.Logger.Warn("remote write: series with invalid labels skipped", "series", invalid)
	}
	if err := app.Commit(); err != nil {
		return http.StatusInternalServerError, err
	}
	return 0, nil
}

// decodes tells whether body decodes as a WriteRequest as Prometheus'
// handler decodes it (gogo protobuf); called only when a request already
// failed, so the fast path never decodes twice.
func decodes(body []byte) bool {
	var req prompb.WriteRequest
	return req.Unmarshal(body) == nil
}

// maxAheadMs is how far ahead of the clock Prometheus' handler takes
// samples.
const maxAheadMs = 10 * 60 * 1000

// series appends one TimeSeries message.
func (h *rwHandler) series(app storage.Appender, sc *rwScratch, ts []byte, maxTime int64, invalid *int) error {
	// 1. The series' label fields as written, the key of the cache: a
	// slice of ts when they are contiguous (as every client writes them),
	// else copied end to end. The labels themselves are decoded only for
	// a series the cache does not know.
	lstart, lend, split := -1, -1, false
	for off := 0; off < len(ts); {
		num, typ, n, m := consumeField(ts[off:])
		if n < 0 {
			return protoError{protowire.ParseError(n)}
		}
		if m < 0 {
			return protoError{protowire.ParseError(m)}
		}
		end := off + n + m
		if num >= 1 && num <= 4 && typ != protowire.BytesType {
			return errWireType
		}
		switch num {
		case 1:
			switch {
			case lstart < 0:
				lstart, lend = off, end
			case !split && lend == off:
				lend = end
			default:
				if !split {
					sc.key = append(sc.key[:0], ts[lstart:lend]...)
					split = true
				}
				sc.key = append(sc.key, ts[off:end]...)
			}
		case 3: // exemplars: dropped (Aerie stores none), but must decode
			v, _ := protowire.ConsumeBytes(ts[off+n:])
			var e prompb.Exemplar
			if e.Unmarshal(v) != nil {
				return errWireType
			}
		case 4:
			return errHistograms
		}
		off = end
	}
	key := sc.key
	switch {
	case lstart < 0:
		key = nil
	case !split:
		key = ts[lstart:lend]
	}
	var (
		rv    refVal
		lset  labels.Labels
		known bool
		k     = h.cache.seriesKey(key)
	)
	if rv = h.cache.get(k); rv.ref != 0 {
		known = true
	} else {
		// Decoded now, samples or not: a label that does not decode fails
		// the request, as in Prometheus.
		var err error
		if lset, err = h.labelsOf(sc, ts); err != nil {
			return err
		}
		if lset.IsEmpty() {
			*invalid++ // its samples are skipped, but must decode
		}
	}
	// 2. The samples (field 2), in order; the first pass checked that
	// every field is well formed.
	for off := 0; off < len(ts); {
		num, typ, n, m := consumeField(ts[off:])
		off += n
		if num != 2 || typ != protowire.BytesType {
			off += m
			continue
		}
		v, _ := protowire.ConsumeBytes(ts[off : off+m])
		off += m
		t, val, err := decodeSample(v)
		if err != nil {
			return err
		}
		if !known && lset.IsEmpty() {
			continue // invalid labels: skipped, but every sample must decode
		}
		if t > maxTime {
			return fmt.Errorf("%w: timestamp is too far in the future", storage.ErrOutOfBounds)
		}
		ref, err := app.Append(rv.ref, lset, t, val)
		if err != nil {
			return err
		}
		if !known && ref != 0 {
			rv = refVal{ref: ref, lhash: lset.Hash()}
			h.cache.put(k, rv)
			known = true
		}
	}
	return nil
}

// labelsOf decodes the labels of the series ts and checks them as
// Prometheus' handler does; empty if they are invalid, an error if a
// label does not decode.
func (h *rwHandler) labelsOf(sc *rwScratch, ts []byte) (labels.Labels, error) {
	sc.labels = sc.labels[:0]
	err := forEachField(ts, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != 1 {
			return nil
		}
		var l rwLabel
		err := forEachField(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
			if (num == 1 || num == 2) && typ != protowire.BytesType {
				return errWireType
			}
			switch num {
			case 1:
				l.name = v
			case 2:
				l.value = v
			}
			return nil
		})
		sc.labels = append(sc.labels, l)
		return err
	})
	if err != nil {
		return labels.EmptyLabels(), err
	}
	sc.sb.Reset()
	for _, l := range sc.labels {
		sc.sb.Add(string(l.name), string(l.value))
	}
	sc.sb.Sort()
	ls := sc.sb.Labels()
	if !ls.Has(labels.MetricName) || !ls.IsValid(model.UTF8Validation) {
		return labels.EmptyLabels(), nil
	}
	if _, dup := ls.HasDuplicateLabelNames(); dup {
		return labels.EmptyLabels(), nil
	}
	return ls, nil
}

// decodeSample decodes a prometheus.Sample: value (1, double) and
// timestamp (2, int64).
func decodeSample(b []byte) (t int64, v float64, err error) {
	// As every client writes one: the value, then the timestamp.
	if len(b) >= 11 && b[0] == 0x09 && b[9] == 0x10 {
		if u, n := protowire.ConsumeVarint(b[10:]); n == len(b)-10 {
			return int64(u), math.Float64frombits(binary.LittleEndian.Uint64(b[1:9])), nil
		}
	}
	err = forEachFieldRaw(b, func(num protowire.Number, typ protowire.Type, raw []byte, u uint64) error {
		switch {
		case num == 1 && typ == protowire.Fixed64Type:
			v = math.Float64frombits(u)
		case num == 2 && typ == protowire.VarintType:
			t = int64(u)
		case num == 1 || num == 2:
			return errWireType
		}
		return nil
	})
	return t, v, err
}

// consumeField returns the number and type of the field at the start of
// b, the length of its tag and of its value (a bytes field's with its
// length prefix); a negative length is protowire's error code. A one-byte
// tag of a bytes field shorter than 128 bytes, what clients write for
// labels and samples, is read without calling into protowire.
func consumeField(b []byte) (protowire.Number, protowire.Type, int, int) {
	if len(b) >= 2 && b[0] >= 1<<3 && b[0] < 0x80 && b[0]&7 == byte(protowire.BytesType) && b[1] < 0x80 && 2+int(b[1]) <= len(b) {
		return protowire.Number(b[0] >> 3), protowire.BytesType, 1, 1 + int(b[1])
	}
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 {
		return 0, 0, n, 0
	}
	return num, typ, n, protowire.ConsumeFieldValue(num, typ, b[n:])
}

// errWireType is a known field with the wrong wire type, or a metadata or
// exemplar message that does not decode.
var errWireType = protoError{errors.New("field with a wrong wire type")}

// protoError is a malformed protobuf message: the request is handed to
// Prometheus' handler, which refuses it in its words.
type protoError struct{ err error }

func (e protoError) Error() string { return "decode remote write request: " + e.err.Error() }
func (e protoError) Unwrap() error { return e.err }

// forEachField calls fn for every field of message b with its bytes (for
// length-delimited fields; nil for others).
func forEachField(b []byte, fn func(protowire.Number, protowire.Type, []byte) error) error {
	return forEachFieldRaw(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		return fn(num, typ, v)
	})
}

// forEachFieldRaw is forEachField that also passes the value of varint
// and fixed fields.
func forEachFieldRaw(b []byte, fn func(protowire.Number, protowire.Type, []byte, uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protoError{protowire.ParseError(n)}
		}
		b = b[n:]
		var (
			v []byte
			u uint64
		)
		switch typ {
		case protowire.VarintType:
			u, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			u, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var u32 uint32
			u32, n = protowire.ConsumeFixed32(b)
			u = uint64(u32)
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protoError{protowire.ParseError(n)}
		}
		b = b[n:]
		if err := fn(num, typ, v, u); err != nil {
			return err
		}
	}
	return nil
}
