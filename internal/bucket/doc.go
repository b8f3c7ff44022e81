// Package bucket is Aerie's object-storage tier: blocks uploaded to a
// bucket in CloudTS' layout, metadata apart from data, read back with range
// GETs.
//
// Design. The providers are github.com/thanos-io/objstore's (filesystem,
// S3, GCS, Azure, Swift), each opened from its own YAML, as in objstore's
// client config: a Config names the provider (type) and carries its config
// through untouched, plus Aerie's own request options. A zero Config is the
// embedded default: the filesystem provider under <data dir>/bucket.
//
// Bucket wraps the provider's objstore.Bucket. Every call is a sequence of
// attempts; each attempt runs under its own per-request timeout and, if it
// fails with a transient error, is followed by another after an
// exponential backoff with full jitter (a uniform wait in [0, min(max
// backoff, min backoff·2^attempt)]). Transient errors are HTTP 5xx (but
// 501 and 505), 429 and 408 as each provider's SDK reports them, gRPC
// Unavailable, Internal and ResourceExhausted, the per-request timeout,
// network errors, connections reset or closed, and bodies cut short.
// GETs read the whole body into memory, so a short body is seen, and
// retried, before the bytes reach the caller. Wrap puts the same layer
// over any objstore.Bucket (the tests wrap objstore's in-memory bucket).
//
// Invariants:
//  1. A Bucket method returns bytes only when it read exactly the bytes
//     asked for: GetRange exactly length bytes, Get exactly the size that
//     Attributes reported. A body of any other length is an error naming
//     the object, and for GetRange the offset and length.
//  2. Not-found is never retried. Errors of a missing object satisfy
//     errors.Is(err, ErrNotFound) and Bucket.IsObjNotFoundErr.
//  3. The caller's context is never outlived: once it is done, no attempt
//     starts and no backoff continues; only the per-request timeout that
//     Bucket adds itself counts as a transient timeout.
//  4. An operation makes at most 1+MaxRetries attempts and each backoff is
//     at most RetryMaxBackoff, so an operation ends within
//     (1+MaxRetries)·Timeout + MaxRetries·RetryMaxBackoff.
//  5. At most MaxParallelGets attempts of Get and GetRange are in flight
//     per Bucket; a slot is held during an attempt, not during its backoff.
//  6. Bucket is the only retry layer: Open sets the S3, GCS and Azure
//     providers' own max_retries to 1 (a single try) unless the provider
//     config sets it (S3's may only be 1), and minio-go, under S3, does not
//     wait after a failed try; so retries are counted, bounded and
//     jittered in one place.
//  7. Iter lists a directory completely before it calls f, so a retried
//     listing never calls f twice for one name, and f's error is returned
//     as is, never retried.
//  8. Object names are relative, clean, slash-separated paths without ".."
//     elements; others are rejected before any request, so no name leaves
//     the filesystem provider's directory.
//  9. Every attempt is counted in aerie_bucket_requests_total by operation
//     and result, and every retry in aerie_bucket_retries_total by
//     operation and reason.
//
// Layout (layout.go, docs/format/bucket.md): TagDict segments, and per
// block data objects packing its group extents, a metrics object (its
// block metrics, zstd-compressed) and a metadata object.
// Uploader writes them; OpenBlock reads a block back; Tier is the
// engine's remote tier (tsdb.Remote) over them.
//
//  10. A block is visible in the bucket only once its metadata object
//     exists, and that object is written last: after every data object,
//     its metrics object and the TagDict segment the block needs were
//     written and read back byte for byte.
//  11. TagDict segments are append-only and contiguous in code order; a
//     dictionary rebuilt from them gives every code the pair it had.
//  12. Every byte read from the bucket is checked before use: metadata
//     objects against their trailing CRC32C, metrics objects against the
//     metadata object's size and CRC32C and their section against the
//     index footer's length and CRC32C, value-column windows against
//     their window CRC32C (Placement.Windows), segments against their
//     records' CRCs; `aerie bucket verify` checks whole extents against
//     the block index's CRC32C. Damage is a *CorruptionError naming the
//     object and byte offset.
//  13. The filesystem provider's uploads are atomic and durable (temporary
//     name, fsync, rename, directory fsync): no object is ever torn under
//     its own name.
//  14. A block selection reads no data object until its first read, then
//     fetches the windows of every column range of its series at once: the
//     timestamp columns come from the metadata object, cached windows from
//     the cache, the rest in one round of range GETs, coalesced within
//     CoalesceGap and at most ParallelGets at a time. Windows are kept in
//     an LRU bounded in bytes (ExtentCache, goroutine-safe under its mu).
//  15. A block's metrics object is fetched only when its metrics are
//     read (value search, aggregation, sensor metadata), at most once at a
//     time per block, and kept parsed in an LRU bounded in bytes
//     (MetricsCache), and on local disk with the MetaCache; a query
//     holding a section evicted meanwhile keeps it until it is done. Metadata objects of version 2, whose index
//     holds the metrics, are still read.
//
// Locking: Uploader serializes segment uploads under its mu; Tier guards
// its uploader under its mu; a block's metricsLoader serializes its fetches
// under its mu; the LRUs (lru: ExtentCache, MetricsCache) guard their
// state under their own mu, never held during a fetch. Bucket has no mutex. Its fields are set by Open and Wrap and
// never change; the GET semaphore is a buffered channel and the metrics are
// Prometheus collectors, both goroutine-safe. The providers are
// goroutine-safe (objstore's contract). So every Bucket method may be
// called from any number of goroutines.
//
// Test helpers: package s3test starts a versitygw S3 server for tests;
// package faultproxy puts latency, 503s, cut-short bodies and connection
// resets between a client and a server.
package bucket
