// Package listen holds the network listeners of Aerie's line and datagram
// protocols (Graphite plaintext and pickle, statsd) and the bounded queue
// that carries their parsed samples to the one goroutine writing to storage.
//
// A protocol package uses it so:
//
//	m, _ := listen.NewMetrics("aerie", "graphite", reg)   // aerie_graphite_dropped_total{listener}, ...
//	q := listen.NewQueue(listen.QueueOptions{Size: 1024, Metrics: m}, writeBatch)
//	tcp, _ := listen.ListenLines("127.0.0.1:2003", listen.TCPOptions{Name: "plaintext_tcp", Metrics: m},
//		func(src net.Addr) listen.ConnHandler { ... parse lines, q.Put(batch) in Flush ... })
//	udp, _ := listen.ListenUDP("127.0.0.1:2003", listen.UDPOptions{Name: "plaintext_udp", Metrics: m},
//		handler) // parse the datagram, q.TryPut(batch)
//	...
//	tcp.Close(); udp.Close() // first the producers,
//	q.Close()                // then the queue, which drains.
//
// TCP: ListenLines serves newline-delimited lines to a ConnHandler per
// connection; ListenConns hands the raw connection to a function, for framed
// protocols. Each connection has its goroutine; MaxConns bounds them (a
// connection over the limit is closed at once and counted), IdleTimeout
// closes a silent connection, MaxLineLen bounds a line (a longer one is
// reported to TooLong with its length and skipped to the next newline; the
// connection goes on). ConnHandler.Flush is called before every read from the
// connection (so before the reader can block) and at its end: a handler
// batches lines between Flushes, so a batch holds at most one read buffer
// (64 KiB) of lines under load and no line waits for the next one when the
// client pauses.
//
// UDP: ListenUDP reads datagrams in one goroutine; one over MaxDatagram is
// counted and reported to TooLong instead.
//
// Queue: batches go from producers to one consumer in order. Put blocks
// while the queue is full; TryPut drops and counts. An optional Tick runs on
// the consumer goroutine between batches every TickEvery and once at Close,
// for consumers that gather batches into larger writes.
//
// Metrics (prefix namespace_subsystem, e.g. aerie_graphite_ or aerie_statsd_):
// dropped_total{listener}, queue_length, connections{listener},
// connections_refused_total{listener}, too_long_total{listener}.
//
// Invariants:
//
//  1. A TCP reader never drops a line it read: a full queue blocks it (Put),
//     the kernel's receive window fills and the client slows down.
//  2. Every sample a UDP producer loses to a full or closed queue is counted
//     in dropped_total under its listener (TryPut); there are no silent drops.
//  3. TCPServer.Close returns only after every complete line read from any
//     connection has been passed to Line and every handler has been flushed
//     and closed; UDPServer.Close returns only after the datagram being
//     handled has been handed on; Queue.Close returns only after every
//     batch it accepted has been handed to the consumer, the consumer has
//     returned and the final Tick (if any) has run. Closing listeners before their queue therefore loses
//     nothing that was read.
//  4. A partial last line (no "\n") is passed on only at a clean EOF; when
//     the connection is cut (Close, IdleTimeout, reset) it is discarded, as
//     it may be truncated.
//  5. No line longer than MaxLineLen reaches Line, and no datagram longer
//     than MaxDatagram reaches Packet, whatever the input; memory per
//     connection is bounded by MaxLineLen plus the read buffer.
//  6. Handlers of one connection (or of one UDP socket) are called from one
//     goroutine; the byte slices given to them are valid only during the
//     call.
//  7. No goroutine started here outlives Close.
package listen
