package cacheserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aerie-db/aerie/internal/cache"
	"github.com/aerie-db/aerie/internal/listen"
)

// Limits and defaults of the memcached listener.
const (
	// MaxLineLen is the longest command line (memcached's own limit), but
	// for get and gets, whose lines may name many keys up to MaxGetLineLen.
	MaxLineLen    = 2048
	MaxGetLineLen = 64 << 10

	DefaultMaxItemSize = 16 << 20
)

// MemcachedOptions configure a memcached listener.
type MemcachedOptions struct {
	// MaxItemSize bounds a data block (default DefaultMaxItemSize).
	MaxItemSize int
	// MaxDiscard: a data block over MaxItemSize but at most MaxDiscard
	// bytes is read, dropped and answered CLIENT_ERROR, and the connection
	// goes on; a longer one is answered and the connection closed (default
	// 4*MaxItemSize).
	MaxDiscard int64
	// MaxPoints bounds the points of one data block (default DefaultMaxPoints).
	MaxPoints int
	// MaxConns and IdleTimeout are listen.TCPOptions'. IdleTimeout also
	// bounds how long a reply may wait for a client that does not read.
	MaxConns    int
	IdleTimeout time.Duration
	// Metrics (optional) count connections (listener "memcached").
	Metrics *listen.Metrics
	Logger  *slog.Logger
}

func (o *MemcachedOptions) setDefaults() {
	if o.MaxItemSize <= 0 {
		o.MaxItemSize = DefaultMaxItemSize
	}
	if o.MaxDiscard < int64(o.MaxItemSize) {
		o.MaxDiscard = 4 * int64(o.MaxItemSize)
	}
	if o.MaxPoints <= 0 {
		o.MaxPoints = DefaultMaxPoints
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = listen.DefaultIdleTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// MemcachedServer serves the cache over memcached's text protocol.
type MemcachedServer struct {
	tcp *listen.TCPServer
}

// ListenMemcached listens on addr ("host:port"; port 0 picks one) and serves
// c over memcached's text protocol (docs/cache-api.md).
func ListenMemcached(addr string, c *cache.Cache, o MemcachedOptions) (*MemcachedServer, error) {
	o.setDefaults()
	tcp, err := listen.ListenConns(addr, listen.TCPOptions{
		Name: "memcached", MaxConns: o.MaxConns, IdleTimeout: o.IdleTimeout, Metrics: o.Metrics, Logger: o.Logger,
	}, func(ctx context.Context, conn net.Conn) {
		w := &connWriter{c: conn, timeout: o.IdleTimeout}
		stop := context.AfterFunc(ctx, w.interrupt)
		defer stop()
		serveMemcached(conn, w, c, &o)
	})
	if err != nil {
		return nil, err
	}
	return &MemcachedServer{tcp: tcp}, nil
}

// Addr is the address listened on.
func (s *MemcachedServer) Addr() net.Addr { return s.tcp.Addr() }

// Close stops accepting, lets every connection finish the command it is
// executing and returns when all connections are closed.
func (s *MemcachedServer) Close() error { return s.tcp.Close() }

var errClosing = errors.New("memcached listener closing")

// connWriter bounds every write by the idle timeout and fails writes once
// the server closes, so that a client that does not read cannot hold Close.
type connWriter struct {
	c       net.Conn
	timeout time.Duration
	mu      sync.Mutex // guards closed and the write deadline
	closed  bool
}

func (w *connWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return 0, errClosing
	}
	if w.timeout > 0 {
		w.c.SetWriteDeadline(time.Now().Add(w.timeout))
	}
	w.mu.Unlock()
	return w.c.Write(p)
}

func (w *connWriter) interrupt() {
	w.mu.Lock()
	w.closed = true
	w.c.SetWriteDeadline(time.Unix(1, 0))
	w.mu.Unlock()
}

// serveMemcached executes the commands read from r, answering on w, until
// EOF, quit, a read or write error or a line too long to resynchronize.
// Replies are flushed whenever no more input is buffered, so that pipelined
// commands share writes and no reply waits for the next command.
func serveMemcached(r io.Reader, w io.Writer, c *cache.Cache, o *MemcachedOptions) {
	m := &mcConn{br: bufio.NewReaderSize(r, MaxGetLineLen), bw: bufio.NewWriterSize(w, 16<<10), c: c, o: o}
	for m.command() {
	}
	m.bw.Flush()
}

type mcConn struct {
	br  *bufio.Reader
	bw  *bufio.Writer
	c   *cache.Cache
	o   *MemcachedOptions
	buf []byte // a get reply's JSON, reused
}

// command reads and executes one command; false ends the connection.
func (m *mcConn) command() bool {
	if m.br.Buffered() == 0 && m.bw.Flush() != nil {
		return false
	}
	line, ok := m.readLine()
	if !ok {
		return false
	}
	args := bytes.Fields(line)
	if len(args) == 0 {
		m.reply("ERROR")
		return true
	}
	switch string(args[0]) {
	case "set", "add", "replace":
		return m.store(args)
	case "cas", "append", "prepend":
		return m.unsupported(args)
	case "get", "gets":
		m.get(args)
	case "delete":
		m.delete(args)
	case "version":
		m.reply("VERSION aerie")
	case "quit":
		return false
	default:
		m.reply("ERROR")
	}
	return true
}

// readLine reads a line and returns it without "\r\n" (or "\n"); the slice
// is valid until the next read. A line over the limit is answered and ends
// the connection, as memcached does: the rest of it cannot be told from the
// next command. A partial line at EOF is discarded.
func (m *mcConn) readLine() ([]byte, bool) {
	line, err := m.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		m.reply("CLIENT_ERROR line too long")
		return nil, false
	}
	if err != nil {
		return nil, false
	}
	line = bytes.TrimSuffix(line[:len(line)-1], []byte("\r"))
	if len(line) > MaxLineLen && !bytes.HasPrefix(line, []byte("get ")) && !bytes.HasPrefix(line, []byte("gets ")) {
		m.reply("CLIENT_ERROR line too long")
		return nil, false
	}
	return line, true
}

func (m *mcConn) reply(s string) {
	m.bw.WriteString(s)
	m.bw.WriteString("\r\n")
}

// clientError answers CLIENT_ERROR msg, msg kept on one line.
func (m *mcConn) clientError(msg string) {
	m.reply("CLIENT_ERROR " + oneLine(msg))
}

// oneLine keeps a message on the reply's line.
func oneLine(s string) string { return strings.NewReplacer("\r", " ", "\n", " ").Replace(s) }

// store executes `set|add|replace <key>:<start>:<end> <flags> <exptime>
// <bytes> [noreply]` and its data block. add and replace are set: a range
// is stored whatever the key holds. exptime is ignored: the cache evicts.
func (m *mcConn) store(args [][]byte) bool {
	noreply := len(args) == 6 && string(args[5]) == "noreply"
	if noreply {
		args = args[:5]
	}
	if len(args) != 5 {
		m.clientError("bad command line format: want " + string(args[0]) + " <key>:<start>:<end> <flags> <exptime> <bytes> [noreply]")
		return true
	}
	n, err := strconv.ParseInt(string(args[4]), 10, 64)
	if err != nil || n < 0 {
		m.clientError("bad data length " + quote(string(args[4])))
		return true
	}
	// Check the line, but read the data block first whatever is wrong, to
	// stay in step with the client.
	itemKey := string(args[1])
	keyPart, key, start, end, problem := parseItemKey(itemKey)
	if problem == nil {
		if _, err := strconv.ParseUint(string(args[2]), 10, 32); err != nil {
			problem = badInput("bad flags %s", quote(string(args[2])))
		} else if _, err := strconv.ParseInt(string(args[3]), 10, 64); err != nil {
			problem = badInput("bad exptime %s", quote(string(args[3])))
		}
	}
	if n > int64(m.o.MaxItemSize) {
		if n > m.o.MaxDiscard {
			m.clientError("data block of " + strconv.FormatInt(n, 10) + " bytes is larger than the item limit of " + strconv.Itoa(m.o.MaxItemSize) + " bytes (too large to skip: closing)")
			return false
		}
		if _, err := io.CopyN(io.Discard, m.br, n); err != nil {
			return false
		}
		if _, ok := m.readLine(); !ok {
			return false
		}
		m.clientError("data block of " + strconv.FormatInt(n, 10) + " bytes is larger than the item limit of " + strconv.Itoa(m.o.MaxItemSize) + " bytes")
		return true
	}
	// Grow with what arrives, not with what is announced: a connection
	// costs no more memory than it has sent.
	var data bytes.Buffer
	data.Grow(int(min(n, 64<<10)))
	if _, err := io.CopyN(&data, m.br, n); err != nil {
		return false
	}
	term, ok := m.readLine()
	if !ok {
		return false
	}
	switch {
	case len(term) > 0:
		m.clientError("bad data chunk: the data block is not followed by \\r\\n after " + strconv.FormatInt(n, 10) + " bytes")
		return true
	case problem != nil:
		m.clientError(problem.msg)
		return true
	}
	fields, ierr := parseBody(data.Bytes(), start, end, m.o.MaxPoints)
	if ierr != nil {
		m.clientError(itemKey + ": " + ierr.msg)
		return true
	}
	if err := m.c.Set(key, start, end, fields); err != nil {
		if e := setError(m.o.Logger, keyPart, start, end, err); e.status < 500 {
			m.clientError(e.msg)
		} else {
			m.reply("SERVER_ERROR " + oneLine(e.msg))
		}
		return true
	}
	if !noreply {
		m.reply("STORED")
	}
	return true
}

// unsupported answers cas, append and prepend after skipping their data
// block: a time range's points are set whole.
func (m *mcConn) unsupported(args [][]byte) bool {
	cmd := string(args[0])
	// <cmd> <key> <flags> <exptime> <bytes> ...: cas has its unique after.
	if len(args) < 5 {
		m.clientError("bad command line format")
		return true
	}
	n, err := strconv.ParseInt(string(args[4]), 10, 64)
	if err != nil || n < 0 || n > m.o.MaxDiscard {
		m.clientError(cmd + " is not supported (and its data length cannot be skipped: closing)")
		return false
	}
	if _, err := io.CopyN(io.Discard, m.br, n); err != nil {
		return false
	}
	if _, ok := m.readLine(); !ok {
		return false
	}
	m.clientError(cmd + " is not supported: set a time range's points whole")
	return true
}

type getItem struct {
	text, keyPart string
	key           cache.Key
	start, end    int64
}

// get executes `get|gets <key>:<start>:<end>...`. A hit's VALUE line names
// the item asked; a partial hit's names the range it covers,
// <key>:<S>:<E>; a miss has none. gets gives each a cas unique of 0.
func (m *mcConn) get(args [][]byte) {
	if len(args) < 2 {
		m.reply("ERROR")
		return
	}
	items := make([]getItem, 0, len(args)-1)
	for _, a := range args[1:] {
		it := getItem{text: string(a)}
		var ierr *inputError
		if it.keyPart, it.key, it.start, it.end, ierr = parseItemKey(it.text); ierr != nil {
			m.clientError(ierr.msg)
			return
		}
		items = append(items, it)
	}
	cas := string(args[0]) == "gets"
	for _, it := range items {
		res, err := m.c.Get(it.key, it.start, it.end, nil)
		if err != nil {
			if !errors.Is(err, cache.ErrClosed) {
				m.o.Logger.Error("cache get failed", "key", it.text, "err", err)
			}
			m.reply("SERVER_ERROR get " + quote(it.text) + ": " + oneLine(err.Error()))
			return
		}
		name := it.text
		switch res.Status {
		case cache.Miss:
			continue
		case cache.Partial:
			name = it.keyPart + ":" + strconv.FormatInt(res.Start, 10) + ":" + strconv.FormatInt(res.End, 10)
		}
		m.buf = appendResult(m.buf[:0], res)
		m.bw.WriteString("VALUE " + name + " 0 " + strconv.Itoa(len(m.buf)))
		if cas {
			m.bw.WriteString(" 0")
		}
		m.bw.WriteString("\r\n")
		m.bw.Write(m.buf)
		m.bw.WriteString("\r\n")
		if cap(m.buf) > 1<<20 { // keep no large buffer on an idle connection
			m.buf = nil
		}
	}
	m.reply("END")
}

// delete executes `delete <key>[:<start>:<end>] [noreply]`: every range of
// the key goes; a range, if given, is ignored.
func (m *mcConn) delete(args [][]byte) {
	noreply := len(args) == 3 && string(args[2]) == "noreply"
	if noreply {
		args = args[:2]
	}
	if len(args) != 2 {
		m.clientError("bad command line format: want delete <key> [noreply]")
		return
	}
	text := string(args[1])
	_, key, _, _, ierr := parseItemKey(text)
	if ierr != nil { // no range: the whole text is the key
		if key, ierr = resolveKey(text); ierr != nil {
			m.clientError(ierr.msg)
			return
		}
	}
	found := m.c.Delete(key)
	switch {
	case noreply:
	case found:
		m.reply("DELETED")
	default:
		m.reply("NOT_FOUND")
	}
}

// parseItemKey splits <key>:<start>:<end> at its last two colons (the key
// may hold colons itself) and resolves the key (resolveKey).
func parseItemKey(s string) (keyPart string, key cache.Key, start, end int64, _ *inputError) {
	if len(s) > MaxKeyLen {
		return "", key, 0, 0, badInput("item key of %d bytes is longer than %d", len(s), MaxKeyLen)
	}
	i := strings.LastIndexByte(s, ':')
	j := -1
	if i > 0 {
		j = strings.LastIndexByte(s[:i], ':')
	}
	if j < 0 {
		return "", key, 0, 0, badInput("item key %s: want <key>:<start>:<end>", quote(s))
	}
	var err error
	if start, err = strconv.ParseInt(s[j+1:i], 10, 64); err != nil {
		return "", key, 0, 0, badInput("item key %s: start %s is not an int64 integer", quote(s), quote(s[j+1:i]))
	}
	if end, err = strconv.ParseInt(s[i+1:], 10, 64); err != nil {
		return "", key, 0, 0, badInput("item key %s: end %s is not an int64 integer", quote(s), quote(s[i+1:]))
	}
	if start > end {
		return "", key, 0, 0, badInput("item key %s: start %d is after end %d", quote(s), start, end)
	}
	keyPart = s[:j]
	k, ierr := resolveKey(keyPart)
	if ierr != nil {
		return "", key, 0, 0, badInput("item key %s: %s", quote(s), ierr.msg)
	}
	return keyPart, k, start, end, nil
}
