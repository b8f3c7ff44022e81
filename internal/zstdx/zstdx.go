// Package zstdx holds the zstd encoders and the bounded decoder that
// Aerie's formats share (github.com/klauspost/compress/zstd): the WAL's
// checkpoint frames (docs/format/wal.md) and the bucket's block-metrics
// objects (docs/format/bucket.md).
//
// Invariants:
//  1. Decode allocates at most the size its caller declares, and refuses a
//     declared size that the compressed bytes cannot yield (MaxRatio)
//     before it allocates anything.
//  2. Decode returns exactly the declared number of bytes or an error;
//     it never panics on any input.
//  3. The encoders and the decoder are shared and goroutine-safe
//     (EncodeAll and DecodeAll are safe for concurrent use); frames carry
//     no zstd checksum, since every format that holds them has its own
//     CRC32C.
package zstdx

import (
	"errors"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// MaxRatio bounds what a zstd frame of n bytes can decompress to: every
// block takes at least 4 bytes (an RLE block: a 3-byte header and the
// byte) and yields at most 128 KiB, so n bytes yield less than
// MaxRatio·n.
const MaxRatio = 128 << 10 / 4

// MaxSize is the largest payload Decode accepts.
const MaxSize = 1<<30 + 5

// ErrSize reports a declared size that is out of bounds or not what the
// frame decompressed to.
var ErrSize = errors.New("invalid decompressed size")

func newEncoder(level zstd.EncoderLevel) func() *zstd.Encoder {
	return sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(level),
			zstd.WithEncoderCRC(false), // the container's CRC32C covers it
			zstd.WithLowerEncoderMem(true))
		if err != nil {
			panic(err) // only for invalid options
		}
		return e
	})
}

var (
	fastest = newEncoder(zstd.SpeedFastest)
	dflt    = newEncoder(zstd.SpeedDefault)
	decoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(MaxSize),
			// DecodeAll writes only into the capacity it is given, sized
			// from the caller's declared size.
			zstd.WithDecodeAllCapLimit(true))
		if err != nil {
			panic(err) // only for invalid options
		}
		return d
	})
)

// AppendFastest appends src compressed at zstd's fastest level to dst.
func AppendFastest(dst, src []byte) []byte { return fastest().EncodeAll(src, dst) }

// AppendDefault appends src compressed at zstd's default level to dst:
// for what is written once and read many times.
func AppendDefault(dst, src []byte) []byte { return dflt().EncodeAll(src, dst) }

// Decode decompresses the zstd frame(s) in src, which must yield exactly
// size bytes, into buf if its capacity suffices (else a new slice of
// size bytes). It returns the decompressed bytes and the buffer to reuse.
func Decode(buf, src []byte, size uint64) (out, bufOut []byte, err error) {
	if size == 0 || size > MaxSize {
		return nil, buf, fmt.Errorf("%w: %d bytes declared", ErrSize, size)
	}
	if size > MaxRatio*uint64(len(src)) {
		return nil, buf, fmt.Errorf("%w: %d bytes cannot decompress to %d", ErrSize, len(src), size)
	}
	if uint64(cap(buf)) < size {
		buf = make([]byte, size)
	}
	out, err = decoder().DecodeAll(src, buf[:0:size])
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		return nil, buf, fmt.Errorf("%w: more than the %d bytes declared", ErrSize, size)
	}
	if err != nil {
		return nil, buf, fmt.Errorf("zstd: %w", err)
	}
	if uint64(len(out)) != size {
		return nil, buf, fmt.Errorf("%w: %d bytes decompressed, %d declared", ErrSize, len(out), size)
	}
	return out, buf, nil
}
