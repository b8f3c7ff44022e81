// Package cacheserver holds the front ends of the standalone `aerie cache`
// server: TSCache's time-range key-value interface (TSCache §3.2) over HTTP
// and over memcached's text protocol, for clients of any time-series
// database. The store behind both is one *cache.Cache.
//
// A client caches a query's result for a time range under the query's key
// and asks for it later, for the same range or another:
//
//	h := cacheserver.NewHandler(c, cacheserver.Options{})    // PUT/GET/DELETE /cache/{key}, GET /stats
//	mc, _ := cacheserver.ListenMemcached("127.0.0.1:11211", c, cacheserver.MemcachedOptions{})
//	...
//	mc.Close() // waits for its connections
//
// Keys: 40 hexadecimal digits are the key itself (a client that hashed its
// query text with SHA-1, as TSCache's clients do); any other string is the
// query text, hashed with cache.KeyOf. So `/cache/SELECT…` and
// `/cache/<sha1 of SELECT…>` name the same key. A memcached item key is
// <key>:<start>:<end>, split at its last two colons.
//
// Body: both protocols store and return the same JSON,
//
//	{"fields":{"<name>":[[<t>,<value>],...],...}}                               (set)
//	{"status":"hit|partial","start":S,"end":E,"fields":{"<name>":[[t,v],...]}} (get)
//
// where t is an int64 and a value a JSON number, string, true, false or
// null, stored as the text the client wrote. One hand-written parser
// (parseBody) reads set bodies so that every error names its byte offset,
// and for a bad point its field and index.
//
// Partial hits (TSCache §3.3): the cache answers the head or the tail of a
// range, never a middle. HTTP says so with 206 and X-Cache-Range: S-E;
// memcached, whose clients index the answer by item key, answers under the
// key of the covered range, <key>:<S>:<E>. docs/cache-api.md has the full
// protocols, with curl and memcached examples.
//
// Invariants:
//
//  1. Every Point.V stored through this package is one JSON scalar exactly
//     as written in a body that parsed; a get's answer therefore is valid
//     JSON without re-encoding the values.
//  2. A body whose any point lies outside [start, end], or that breaks a
//     limit (MaxKeyLen, MaxFields, MaxFieldNameLen, the points and size
//     limits of the options), stores nothing: it is refused whole, before
//     the cache sees it.
//  3. Input never panics a handler and every client mistake is answered:
//     HTTP 400 (malformed) or 413 (over a size limit) with a JSON message
//     naming what and where; memcached CLIENT_ERROR. 5xx and SERVER_ERROR
//     mean the cache failed (503: it is closed), and are logged.
//  4. A memcached connection stays in step with its client after an error:
//     a storage command's data block is read (or, over MaxItemSize, skipped
//     up to MaxDiscard) before its line is judged. The connection is closed
//     only on quit, EOF, an I/O error or idle timeout, a line over
//     MaxLineLen (MaxGetLineLen for get and gets), whose end cannot be told
//     from the next command, and a data block over MaxDiscard.
//  5. A memcached connection's memory is bounded by its buffers (64 KiB in,
//     16 KiB out), the data it actually sent of one data block (at most
//     MaxItemSize) and one reply, whatever lengths it announces.
//  6. Every memcached reply line ends in \r\n and holds no other \r or \n;
//     every VALUE carries exactly the bytes it announces.
//  7. MemcachedServer.Close returns after every connection goroutine has
//     ended; a client that does not read its replies holds it no longer
//     than the write that is under way, which Close interrupts.
package cacheserver
