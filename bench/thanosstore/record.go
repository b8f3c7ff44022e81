package thanosstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
)

// Series entries in the index and chunks in the segments are both records:
// a uvarint length L, then extra+L bytes of payload (extra is the chunk's
// encoding byte, 0 for series), then a CRC32C of the payload.

// readRecord reads the record at the start of c. need > 0 says c holds too
// little of it and how many bytes it needs from its start (a lower bound
// while the length itself is cut off).
func readRecord(c []byte, extra int) (payload []byte, need int64, err error) {
	l, n := binary.Uvarint(c)
	switch {
	case n == 0 && len(c) >= binary.MaxVarintLen32:
		return nil, 0, fmt.Errorf("record length longer than %d bytes", binary.MaxVarintLen32)
	case n == 0:
		return nil, int64(binary.MaxVarintLen32 + extra + crc32.Size), nil
	case n < 0:
		return nil, 0, fmt.Errorf("record length overflows 64 bits")
	case l > math.MaxUint32:
		return nil, 0, fmt.Errorf("record length %d exceeds 4 GiB", l)
	}
	total := int64(n) + int64(extra) + int64(l) + crc32.Size
	if int64(len(c)) < total {
		return nil, total, nil
	}
	end := n + extra + int(l)
	payload = c[n:end]
	if want, got := binary.BigEndian.Uint32(c[end:]), crc32.Checksum(payload, castagnoli); want != got {
		return nil, 0, fmt.Errorf("checksum %#x, want %#x", got, want)
	}
	return payload, 0, nil
}

// fetchRecord returns the payload of the record at off in object name. c
// holds what a part's GET returned from off on; ended says that GET came
// back short, so the object ends within c. While c is too short, the record
// is fetched again with the length it turns out to need, as Thanos re-fetches
// a series or chunk longer than its estimate. fetchRecord returns the number
// of GETs it issued, one after the other.
func (b *Block) fetchRecord(ctx context.Context, name string, off int64, c []byte, ended bool, extra int) ([]byte, int, error) {
	for gets := 0; ; gets++ {
		payload, need, err := readRecord(c, extra)
		if err != nil {
			return nil, gets, &CorruptionError{Object: name, Offset: off, Err: err}
		}
		if need == 0 {
			return payload, gets, nil
		}
		if ended {
			return nil, gets, corruptf(name, off, "record needs %d bytes but the object ends %d bytes in", need, len(c))
		}
		if gets == 2 {
			// A cut-off length, then the record: two re-fetches at most.
			return nil, gets, corruptf(name, off, "record still short after %d re-fetches", gets)
		}
		if c, err = getRange(ctx, b.bkt, name, off, need, &b.stats.Gets, &b.stats.BytesFetched); err != nil {
			return nil, gets + 1, err
		}
		ended = int64(len(c)) < need
	}
}

// from returns buf from i on, empty where i is past its end.
func from(buf []byte, i int64) []byte {
	if i > int64(len(buf)) {
		return nil
	}
	return buf[i:]
}
