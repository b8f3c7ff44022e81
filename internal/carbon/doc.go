// Package carbon receives Graphite data as carbon-cache does: the plaintext
// protocol over TCP and UDP ("path value timestamp\n") and the pickle
// protocol over TCP (a 4-byte big-endian length, then a pickled list of
// (path, (timestamp, value)) tuples), and writes it through a
// storage.Appendable. Semantics follow carbon 1.1's protocols.py and
// util.py (TaggedSeries); differences are listed below.
//
// # API
//
//	cfg := carbon.DefaultConfig() // PlaintextTCP, PlaintextUDP 127.0.0.1:2003; PickleTCP 127.0.0.1:2004
//	cfg.Logger, cfg.Registerer = logger, reg
//	r, err := carbon.New(cfg, db) // db: storage.Appendable (Aerie's *tsdb.DB)
//	err = r.Start()
//	...
//	r.Close() // stops listeners, writes and commits everything read, waits for goroutines
//
// Config fields and defaults: PlaintextTCP, PlaintextUDP, PickleTCP (listen
// addresses; "" = off; the zero Config has all three off), QueueSize [1024
// batches], BatchSize [5000 samples; the writer commits every 4×BatchSize
// samples], CommitInterval [100ms; and at least this often], MaxLineLen
// [16384 bytes, Twisted's LineOnlyReceiver limit], MaxPickleSize [1 MiB,
// carbon's PICKLE_RECEIVER_MAX_LENGTH], MaxDatagram [65507], MaxConns [1024
// per TCP listener], IdleTimeout [5m], Limits (MaxPathLen 4096, MaxTags 64,
// MaxTagNameLen 256, MaxTagValueLen 1024), MaxCachedSeries [1<<20], Logger,
// Registerer, Now. The parser is usable alone: ParseLine, NormalizePath,
// MakeSample, Labels, DecodePickle.
//
// # Data model
//
// A path becomes __name__ (any UTF-8; Prometheus 3 and Aerie's head accept
// it; PromQL reaches it as {"a.b.c"}), its tags become labels:
// "a.b;dc=x;env=prod" is {__name__="a.b", dc="x", env="prod"}. Paths are
// normalized as carbon's TaggedSeries.parse(path).path: leading '~' removed
// from the name, a tag named "name" ignored (the name is that tag), tags
// sorted, the last of a repeated tag wins; the OpenMetrics form
// `a.b{dc="x"}` is accepted too. Tag names may not be empty or contain
// ;!^=, values may not be empty, contain ';' or start with '~' (carbon's
// validateTagAndValue). Timestamps are Unix seconds (integer or float),
// stored in milliseconds rounded to the nearest; a timestamp that truncates
// to -1 means now (carbon issue 54). Values and timestamps are Python
// floats ("1_000", "1e3", "inf" are numbers; Go's hex floats are not).
// NaN values are dropped as carbon drops them, counted as rejected with
// reason "nan_value".
//
// Differences from carbon, on purpose: a path whose tags do not parse is
// counted malformed (carbon logs it and stores it under the raw path, which
// cannot become labels); tag names starting with "__" are refused (reserved
// labels), and so is ';' in the name of the OpenMetrics form (carbon makes
// "a;b{c=\"d\"}" into the path "a;b;c=d", whose name would read as "a"); a
// non-UTF-8 line is malformed (carbon's decode raises outside its error
// handling), and so are values and timestamps in other scripts' digits
// (Python's float() takes "١") and infinite or NaN timestamps (carbon's int()
// raises on them outside its error handling); blank lines are skipped without counting; a whitespace-only UDP
// line likewise; UDP datagrams are split on ASCII line breaks only (Python's
// splitlines also splits on U+0085, U+2028, U+2029); pickle paths may also
// be bytes holding UTF-8; carbon's SafeUnpickler admits two classes
// (copy_reg._reconstructor, __builtin__.object) that no sender of this shape
// needs, DecodePickle admits none.
//
// # Pickle decoding
//
// DecodePickle is not an unpickler but a small stack machine that knows the
// opcodes Python (2 and 3, protocols 0-5) emits for a list of tuples of
// str/bytes, int, float, bool and None, with the memo. Any other opcode,
// notably GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ and NEWOBJ, refuses
// the whole frame with an error naming the opcode and its byte offset. It
// was written instead of using nlpodyssey/gopickle because gopickle's
// Unpickler resolves classes and calls REDUCE on what it finds, and
// allocates the length an opcode announces before reading it; restricting
// it would have meant re-checking every opcode anyway.
//
// # Metrics
//
//	aerie_graphite_received_total{listener}         samples parsed and queued
//	aerie_graphite_stored_total{listener}           samples appended and committed
//	aerie_graphite_malformed_total{listener}        lines, frames and pickle entries that did not parse
//	aerie_graphite_rejected_total{listener,reason}  parsed but not stored: nan_value, out_of_order, too_old,
//	                                                out_of_bounds, duplicate, too_far_in_future,
//	                                                too_old_for_retention, invalid_labels, series_limit,
//	                                                commit_failed, other
//	aerie_graphite_dropped_total{listener}          samples dropped by UDP because the queue was full
//	aerie_graphite_queue_length                     batches waiting for the writer
//	aerie_graphite_connections{listener}, aerie_graphite_connections_refused_total{listener},
//	aerie_graphite_too_long_total{listener}         (package listen; too long lines and datagrams
//	                                                are also in malformed_total)
//
// listener is plaintext_tcp, plaintext_udp or pickle_tcp. Malformed input
// and rejected samples are logged at Warn, at most 10 lines per 10 s, with
// the source address and the line cut at 400 bytes (carbon's cut).
//
// # Invariants
//
//  1. No input stops a listener: a malformed line, frame or entry is
//     counted and skipped; only a pickle length over MaxPickleSize closes
//     its connection (carbon does the same: the stream cannot be resynced).
//  2. Every line or entry read ends in exactly one of: stored, rejected
//     (with a reason), malformed, or dropped (UDP only); all four are
//     counted. TCP readers never drop: a full queue blocks them.
//  3. Close returns after every sample read before it was called (complete
//     lines and frames) has been appended and committed. Commits run one at
//     a time, in the order the writer filled the appenders (a series'
//     samples reach the engine in time order), on a goroutine of their own
//     while the writer fills the next appender, so a commit's batch grows
//     with the previous commit's fsync wait.
//  4. ParseLine, NormalizePath and DecodePickle never panic, run in time
//     linear in their input, and are deterministic.
//  5. A normalized path round-trips: Labels(NormalizePath(p)) holds the
//     name and exactly the tags kept, and a normalized path without '{' is a
//     fixed point of NormalizePath (with '{', a value ending in `"}` could
//     read as the OpenMetrics form, in carbon too).
//  6. DecodePickle builds nothing but None, bools, numbers, strings, lists
//     and tuples, and never executes or looks up anything.
package carbon
