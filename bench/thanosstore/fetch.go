package thanosstore

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/thanos-io/objstore"
)

// maxConcurrentGets bounds the GETs one phase of Select has in flight.
// Thanos' per-block errgroups have no bound of their own; this one is the
// benchmark's, so that a query cannot open thousands of connections.
const maxConcurrentGets = 16

// Stats counts the requests a Block makes and the bytes it receives. It is
// safe for concurrent use; several blocks may share one.
type Stats struct {
	// MetaGets and MetaBytes count OpenBlock's requests (meta.json GET,
	// index HEAD, the index-header's range GETs, the chunks/ listing) and
	// the bytes they returned.
	MetaGets, MetaBytes atomic.Int64
	// Gets and BytesFetched count Select's range GETs and the bytes they
	// returned (less than asked where a range runs past an object's end).
	Gets, BytesFetched atomic.Int64
	// RoundTrips counts Select's waits for the bucket: per phase, one per
	// wave of at most maxConcurrentGets parallel GETs, plus one per re-fetch
	// a part had to make after its first GET (see doc.go, claim 6).
	RoundTrips atomic.Int64
	// BytesNeeded counts the bytes of the chunks Select decoded (encoding
	// byte and data): BytesFetched ÷ BytesNeeded is the read
	// amplification of the chunk reads and everything before them.
	BytesNeeded atomic.Int64
}

// CorruptionError reports data in an object that cannot be what the
// prometheus/tsdb format says is there: a checksum mismatch, a length that
// runs past the object's end, a reference out of range.
type CorruptionError struct {
	Object string // object name in the bucket
	Offset int64  // byte offset in Object of the record that failed
	Err    error
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("corrupt object %s at offset %d: %v", e.Object, e.Offset, e.Err)
}

func (e *CorruptionError) Unwrap() error { return e.Err }

func corruptf(object string, off int64, format string, args ...any) error {
	return &CorruptionError{Object: object, Offset: off, Err: fmt.Errorf(format, args...)}
}

// getRange reads [off, off+length) of name and counts the request in gets
// and the bytes in bytes. The answer is shorter than length where the
// object ends first, as objstore providers do for ranges past the end.
func getRange(ctx context.Context, bkt objstore.BucketReader, name string, off, length int64, gets, bytes *atomic.Int64) ([]byte, error) {
	gets.Add(1)
	rc, err := bkt.GetRange(ctx, name, off, length)
	if err != nil {
		return nil, fmt.Errorf("get %s [%d, %d): %w", name, off, off+length, err)
	}
	b, err := io.ReadAll(io.LimitReader(rc, length))
	bytes.Add(int64(len(b)))
	if cerr := rc.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("read %s [%d, %d): %w", name, off, off+length, err)
	}
	return b, nil
}

// runPhase calls fetch for parts 0…n-1 with at most maxConcurrentGets
// running, and returns the first error; the context passed to fetch is
// cancelled once one fails. fetch returns how many GETs it issued one after
// another (1, or more when it had to re-fetch). RoundTrips grows by the
// waves the bound imposes plus the longest chain of re-fetches.
func runPhase(ctx context.Context, stats *Stats, n int, fetch func(ctx context.Context, i int) (chain int, err error)) error {
	if n == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		wg  sync.WaitGroup
		sem = make(chan struct{}, maxConcurrentGets)

		mu       sync.Mutex // guards following
		firstErr error
		maxChain = 1
	)
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			chain, err := fetch(ctx, i)
			mu.Lock()
			defer mu.Unlock()
			maxChain = max(maxChain, chain)
			if err != nil && firstErr == nil {
				firstErr = err
				cancel()
			}
		}()
	}
	wg.Wait()
	stats.RoundTrips.Add(int64((n+maxConcurrentGets-1)/maxConcurrentGets - 1 + maxChain))
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return firstErr
}
