package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/klauspost/compress/s2"

	"github.com/aerie-db/aerie/internal/zstdx"
)

// Frame codecs of format version 2: the first byte of a frame's data. The
// values are persisted: never renumber them.
const (
	// FrameStored: the payload follows as is.
	FrameStored = 0
	// FrameZstd: the payload is zstd-compressed (checkpoints).
	FrameZstd = 1
	// FrameSnappy: the payload is a Snappy block (Log's batches).
	FrameSnappy = 2
)

const (
	// MaxFramePayload is the largest decompressed payload of a version 2
	// frame: a record of MaxRecordSize bytes and its length prefix.
	MaxFramePayload = 1<<30 + 5 // MaxRecordSize + binary.MaxVarintLen32
	// maxFrameData is the largest data of a version 2 frame on disk: a
	// stored payload of MaxFramePayload bytes with its codec byte and size.
	maxFrameData = 1 + binary.MaxVarintLen32 + MaxFramePayload
	// zstdMaxRatio bounds what a zstd frame of n bytes can decompress to
	// (zstdx.MaxRatio): a larger declared size is corrupt, and is rejected
	// before any allocation.
	zstdMaxRatio = zstdx.MaxRatio
	// snappyMaxRatio is the same bound for a Snappy block: its densest
	// element, a 3-byte copy, yields 64 bytes.
	snappyMaxRatio = 22
	// checkpointFrameSize is the payload size at which a checkpoint starts
	// a new frame: large frames compress better, and a checkpoint is
	// atomic as a file, not per frame.
	checkpointFrameSize = 1 << 20
)

var (
	errFrameCodec   = errors.New("unknown frame codec")
	errFrameSize    = errors.New("invalid frame payload size")
	errFrameRecords = errors.New("invalid records in frame payload")
)

// zstd's encoder and decoder are package zstdx's, shared with the
// bucket; docs/format/wal.md gives the measurements behind the choice of
// Snappy for Log's batches and zstd's fastest level for checkpoints.

// appendBatch appends recs as version 2 frames to dst: one frame, unless
// their payload exceeds MaxFramePayload (a batch of more than 1 GiB), when
// the records are split at record boundaries into as few frames as fit.
// scratch is reused for the uncompressed payload and returned.
func appendBatch(dst, scratch []byte, recs [][]byte) (out, scratchOut []byte) {
	scratch = scratch[:0]
	for _, r := range recs {
		if len(scratch) > 0 && len(scratch)+binary.MaxVarintLen32+len(r) > MaxFramePayload {
			dst = appendFrame(dst, scratch, FrameSnappy)
			scratch = scratch[:0]
		}
		scratch = appendPayloadRecord(scratch, r)
	}
	return appendFrame(dst, scratch, FrameSnappy), scratch
}

// appendPayloadRecord appends rec to a frame payload: its length as a
// uvarint, then its bytes.
func appendPayloadRecord(payload, rec []byte) []byte {
	payload = binary.AppendUvarint(payload, uint64(len(rec)))
	return append(payload, rec...)
}

// appendFrame appends a version 2 frame holding payload to dst: the
// framing header (length, CRC32C of the data), then the data: the codec
// byte, the payload size as a uvarint and the payload, compressed with
// codec (FrameSnappy or FrameZstd) unless that would not make it smaller.
func appendFrame(dst, payload []byte, codec byte) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, RecordHeaderSize)...)
	data := len(dst)
	dst = append(dst, codec)
	dst = binary.AppendUvarint(dst, uint64(len(payload)))
	body := len(dst)
	switch codec {
	case FrameZstd:
		dst = zstdx.AppendFastest(dst, payload)
	case FrameSnappy:
		dst = slices.Grow(dst, s2.MaxEncodedLen(len(payload)))
		n := len(s2.EncodeSnappy(dst[body:cap(dst)], payload))
		dst = dst[:body+n]
	}
	if codec == FrameStored || len(dst)-body >= len(payload) {
		dst = append(dst[:data], FrameStored)
		dst = binary.AppendUvarint(dst, uint64(len(payload)))
		dst = append(dst, payload...)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-data))
	binary.BigEndian.PutUint32(dst[start+4:], checksum(dst[data:]))
	return dst
}

// decodeFrame returns the payload of the data of a version 2 frame, whose
// checksum has been verified. buf is reused for a compressed payload; its
// growth is bounded by what the data can decompress to.
func decodeFrame(data, buf []byte) (payload, bufOut []byte, err error) {
	if len(data) == 0 {
		return nil, buf, errFrameCodec
	}
	codec := data[0]
	size, n := binary.Uvarint(data[1:])
	if n <= 0 || size == 0 || size > MaxFramePayload {
		return nil, buf, errFrameSize
	}
	body := data[1+n:]
	switch codec {
	case FrameStored:
		if uint64(len(body)) != size {
			return nil, buf, fmt.Errorf("%w: %d bytes stored, %d declared", errFrameSize, len(body), size)
		}
		return body, buf, nil
	case FrameZstd:
		out, buf, err := zstdx.Decode(buf, body, size)
		if errors.Is(err, zstdx.ErrSize) {
			return nil, buf, fmt.Errorf("%w: %w", errFrameSize, err)
		}
		return out, buf, err
	case FrameSnappy:
		if size > snappyMaxRatio*uint64(len(body)) {
			return nil, buf, fmt.Errorf("%w: %d bytes cannot decompress to %d", errFrameSize, len(body), size)
		}
		if n, err := s2.DecodedLen(body); err != nil || uint64(n) != size {
			return nil, buf, fmt.Errorf("%w: Snappy block of %d bytes, %d declared", errFrameSize, n, size)
		}
		if uint64(cap(buf)) < size {
			buf = make([]byte, size)
		}
		out, err := s2.Decode(buf[:size], body)
		if err != nil {
			return nil, buf, fmt.Errorf("snappy: %w", err)
		}
		return out, buf, nil
	default:
		return nil, buf, fmt.Errorf("%w %d", errFrameCodec, codec)
	}
}

// checkPayload checks that payload is a sequence of records, each a
// uvarint length of 1 to MaxRecordSize and that many bytes, so that a
// frame's records are applied all or none.
func checkPayload(payload []byte) error {
	for len(payload) > 0 {
		n, k := binary.Uvarint(payload)
		if k <= 0 || n == 0 || n > MaxRecordSize || n > uint64(len(payload)-k) {
			return errFrameRecords
		}
		payload = payload[k+int(n):]
	}
	return nil
}

// nextRecord returns the first record of a payload that checkPayload
// accepted, and the rest.
func nextRecord(payload []byte) (rec, rest []byte) {
	n, k := binary.Uvarint(payload)
	end := k + int(n)
	return payload[k:end:end], payload[end:]
}
