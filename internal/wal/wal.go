package wal

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// SyncMode says when Log returns. The values are configuration: never
// renumber them.
type SyncMode uint8

const (
	// SyncBatch (the default): Log returns after the records are written and
	// fsync'd. Concurrent callers share fsyncs (group commit). Nothing
	// acknowledged is lost on kill -9 or power loss.
	SyncBatch SyncMode = 0
	// SyncInterval: Log returns after write(2); a background loop fsyncs
	// every Options.SyncInterval. Power loss loses up to the last interval;
	// kill -9 loses nothing already written to the OS.
	SyncInterval SyncMode = 1
)

func (m SyncMode) String() string {
	switch m {
	case SyncBatch:
		return "batch"
	case SyncInterval:
		return "interval"
	default:
		return fmt.Sprintf("SyncMode(%d)", uint8(m))
	}
}

// Defaults for Options.
const (
	DefaultSegmentSize  = 128 << 20
	DefaultSyncInterval = time.Second
)

// Options configure a WAL. The zero value is valid.
type Options struct {
	// SegmentSize is the size at which a new segment is cut (default
	// DefaultSegmentSize). A batch larger than a segment gets a segment of
	// its own.
	SegmentSize int64
	// Sync is the durability mode (default SyncBatch).
	Sync SyncMode
	// SyncInterval is the fsync period of SyncInterval mode (default
	// DefaultSyncInterval).
	SyncInterval time.Duration
	// Logger receives torn-tail truncations and repairs (default: discard).
	Logger *slog.Logger
	// OnFsync, if set, is called after every fsync of a segment file with
	// its duration (for aerie_wal_fsync_duration_seconds). It must be fast
	// and must not call into the WAL.
	OnFsync func(time.Duration)
}

// ErrClosed is returned by calls on a closed WAL.
var ErrClosed = errors.New("wal: closed")

// WAL is a segmented write-ahead log. All methods are safe for concurrent
// use; Replay, Checkpoint and Repair exclude one another.
//
// Lock order: maintMu before mu.
type WAL struct {
	// Immutable after Open.
	dir     string
	opts    Options
	logger  *slog.Logger
	create  createFileFunc
	done    chan struct{} // closed when the background goroutine exits
	onFsync func(time.Duration)

	// maintMu serializes Replay, Checkpoint and Repair, the operations that
	// read or remove files other than the active segment.
	maintMu sync.Mutex

	mu sync.Mutex // guards everything below
	// workCond wakes the background goroutine: new writes, close or failure.
	workCond sync.Cond
	// syncedCond wakes Log callers: synced advanced, or err was set.
	syncedCond sync.Cond
	active     segmentFile // segment being written; nil until the first Log or Cut
	activeIdx  int         // index of active
	activeSize int64       // bytes written to active, header included
	nextIdx    int         // index of the next segment to create
	tailIdx    int         // last segment written by an earlier process: the only one whose torn tail Replay truncates (0: none)
	written    uint64      // batches written so far
	synced     uint64      // batches known to be fsync'd
	syncing    bool        // the background goroutine is fsyncing without mu
	retired    []segmentFile
	err        error // sticky: set by a failed write or fsync, returned by every later call
	closed     bool
}

// encBuf holds the buffers that encode one batch: its payload and its
// frames. Log takes one from encBufs for the duration of a call.
type encBuf struct{ payload, frames []byte }

var encBufs = sync.Pool{New: func() any { return new(encBuf) }}

// put returns b to encBufs, unless one huge batch grew it.
func (b *encBuf) put() {
	if cap(b.payload) > 4<<20 || cap(b.frames) > 4<<20 {
		return // do not pin the memory of one huge batch
	}
	encBufs.Put(b)
}

// Open opens the WAL in dir, creating dir if needed. It does not replay:
// call Replay before the first Log to read the log and truncate a torn tail
// left by a crash. Writes go to a new segment after the last existing one.
func Open(dir string, opts Options) (*WAL, error) {
	return open(dir, opts, osCreate)
}

func open(dir string, opts Options, create createFileFunc) (*WAL, error) {
	if opts.SegmentSize == 0 {
		opts.SegmentSize = DefaultSegmentSize
	}
	if opts.SegmentSize < 0 {
		return nil, fmt.Errorf("wal: negative segment size %d", opts.SegmentSize)
	}
	if opts.SyncInterval == 0 {
		opts.SyncInterval = DefaultSyncInterval
	}
	if opts.Sync != SyncBatch && opts.Sync != SyncInterval {
		return nil, fmt.Errorf("wal: unknown sync mode %d", opts.Sync)
	}
	if opts.Sync == SyncInterval && opts.SyncInterval < 0 {
		return nil, fmt.Errorf("wal: negative sync interval %s", opts.SyncInterval)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, fmt.Errorf("wal: create directory: %w", err)
	}
	l, err := listDir(dir)
	if err != nil {
		return nil, fmt.Errorf("wal: list directory: %w", err)
	}
	for _, name := range l.tmp {
		if err := os.Remove(dirJoin(dir, name)); err != nil {
			return nil, fmt.Errorf("wal: remove unfinished checkpoint: %w", err)
		}
	}
	w := &WAL{
		dir:     dir,
		opts:    opts,
		logger:  logger,
		create:  create,
		done:    make(chan struct{}),
		onFsync: opts.OnFsync,
		nextIdx: 1,
	}
	if n := len(l.segments); n > 0 {
		w.tailIdx = l.segments[n-1]
		w.nextIdx = w.tailIdx + 1
	}
	if n := len(l.checkpoints); n > 0 && l.checkpoints[n-1] > w.nextIdx {
		w.nextIdx = l.checkpoints[n-1]
	}
	w.workCond.L = &w.mu
	w.syncedCond.L = &w.mu
	if opts.Sync == SyncBatch {
		go w.flushLoop()
	} else {
		go w.intervalLoop()
	}
	return w, nil
}

// Dir returns the WAL directory.
func (w *WAL) Dir() string { return w.dir }

// Log appends recs as one batch: after a crash either all of them or none
// replay. Every record must be 1..MaxRecordSize bytes. In SyncBatch mode Log
// returns once the batch is fsync'd; in SyncInterval mode once it is
// written. A batch never spans segments.
//
// A failed write or fsync fails the WAL: Log returns the error to every
// caller that was waiting and to every later call. Reopen to recover.
func (w *WAL) Log(recs ...[]byte) error {
	_, err := w.LogSegment(recs...)
	return err
}

// LogSegment is Log that also returns the index of the segment the batch
// was written to, so callers can track what each segment holds without
// listing the directory.
func (w *WAL) LogSegment(recs ...[]byte) (int, error) {
	seg, seq, err := w.write(recs)
	if err != nil || seq == 0 {
		return seg, err
	}
	return seg, w.Wait(seq)
}

// Write writes recs as one batch, as Log does, but returns once they are
// written, with a ticket for Wait: a caller that must order its writes
// (under its own lock) waits for their fsync after releasing that lock, so
// concurrent callers share one fsync instead of queueing behind each
// other's. The batches of earlier Write calls are before this one's in
// the log.
func (w *WAL) Write(recs ...[]byte) (uint64, error) {
	_, seq, err := w.write(recs)
	return seq, err
}

// Wait returns once the batch of ticket (from Write) is durable as the
// sync mode defines it: fsync'd in SyncBatch mode; in SyncInterval mode
// it returns at once. A ticket of 0 (an empty batch) is durable. It
// returns the WAL's error if it failed before the batch was fsync'd.
func (w *WAL) Wait(ticket uint64) error {
	if ticket == 0 || w.opts.Sync == SyncInterval {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.synced < ticket && w.err == nil {
		w.syncedCond.Wait()
	}
	if w.synced >= ticket {
		return nil
	}
	return w.err
}

// write writes recs as one batch and returns its segment and its ticket
// (0 for no records).
func (w *WAL) write(recs [][]byte) (int, uint64, error) {
	if len(recs) == 0 {
		return 0, 0, nil
	}
	for _, r := range recs {
		if err := checkRecordSize(r); err != nil {
			return 0, 0, fmt.Errorf("wal: %w", err)
		}
	}
	// Compress before taking the lock: concurrent callers compress in
	// parallel, and the lock is held only to write.
	eb := encBufs.Get().(*encBuf)
	defer eb.put()
	eb.frames, eb.payload = appendBatch(eb.frames[:0], eb.payload, recs)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return 0, 0, err
	}
	need := int64(len(eb.frames))
	switch {
	case w.active == nil:
		if err := w.createSegmentLocked(); err != nil {
			return 0, 0, err
		}
	case w.activeSize > SegmentHeaderSize && w.activeSize+need > w.opts.SegmentSize:
		if err := w.cutLocked(); err != nil {
			return 0, 0, err
		}
	}
	n, err := w.active.Write(eb.frames)
	w.activeSize += int64(n)
	if err != nil {
		return 0, 0, w.failLocked(fmt.Errorf("wal: write %s: %w", w.active.Name(), err))
	}
	w.written++
	if w.opts.Sync == SyncBatch {
		w.workCond.Signal()
	}
	return w.activeIdx, w.written, nil
}

// Cut closes the active segment (after fsyncing it) and starts a new one;
// it returns the new segment's index. Records logged after Cut returns go to
// that segment or a later one.
func (w *WAL) Cut() (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return 0, err
	}
	if w.active == nil {
		if err := w.createSegmentLocked(); err != nil {
			return 0, err
		}
		return w.activeIdx, nil
	}
	if err := w.cutLocked(); err != nil {
		return 0, err
	}
	return w.activeIdx, nil
}

// Segments returns the lowest and highest index of the segment files on
// disk, (0, 0) if there are none. Segment indexes start at 1.
func (w *WAL) Segments() (first, last int, err error) {
	l, err := listDir(w.dir)
	if err != nil {
		return 0, 0, fmt.Errorf("wal: list directory: %w", err)
	}
	if len(l.segments) == 0 {
		return 0, 0, nil
	}
	return l.segments[0], l.segments[len(l.segments)-1], nil
}

// Close waits for pending fsyncs, fsyncs and closes the active segment. It
// returns the error that failed the WAL, if any.
func (w *WAL) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	w.closed = true
	w.workCond.Broadcast()
	w.mu.Unlock()
	<-w.done

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.active != nil {
		if w.err == nil && w.synced < w.written {
			if err := w.fsync(w.active); err != nil {
				w.failLocked(err)
			} else {
				w.synced = w.written
			}
		}
		if err := w.active.Close(); err != nil && w.err == nil {
			w.err = fmt.Errorf("wal: close %s: %w", w.active.Name(), err)
		}
		w.active = nil
	}
	w.closeRetiredLocked()
	w.syncedCond.Broadcast()
	return w.err
}

func (w *WAL) usableLocked() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return ErrClosed
	}
	return nil
}

// failLocked makes err sticky and wakes every waiting Log caller.
func (w *WAL) failLocked(err error) error {
	if w.err == nil {
		w.err = err
	}
	w.syncedCond.Broadcast()
	w.workCond.Broadcast()
	return w.err
}

// fsync fsyncs f and reports the duration to OnFsync.
func (w *WAL) fsync(f segmentFile) error {
	start := time.Now()
	err := f.Sync()
	if w.onFsync != nil {
		w.onFsync(time.Since(start))
	}
	if err != nil {
		return fmt.Errorf("wal: fsync %s: %w", f.Name(), err)
	}
	return nil
}

// createSegmentLocked creates segment nextIdx with its header, fsyncs it and
// the directory, and makes it active. Any failure fails the WAL: the
// directory may hold a partial file under the next index.
func (w *WAL) createSegmentLocked() error {
	idx := w.nextIdx
	f, err := w.create(SegmentName(w.dir, idx))
	if err != nil {
		return w.failLocked(fmt.Errorf("wal: create segment: %w", err))
	}
	var h [SegmentHeaderSize]byte
	if _, err := f.Write(appendSegmentHeader(h[:0])); err != nil {
		f.Close()
		return w.failLocked(fmt.Errorf("wal: write header of %s: %w", f.Name(), err))
	}
	if err := w.fsync(f); err != nil {
		f.Close()
		return w.failLocked(err)
	}
	if err := syncDir(w.dir); err != nil {
		f.Close()
		return w.failLocked(fmt.Errorf("wal: %w", err))
	}
	w.active, w.activeIdx, w.activeSize, w.nextIdx = f, idx, SegmentHeaderSize, idx+1
	return nil
}

// cutLocked fsyncs the active segment, retires it and creates the next
// one. The fsync comes first so that a segment is complete on disk before
// its successor exists: only the last segment can have a torn tail.
func (w *WAL) cutLocked() error {
	old := w.active
	if err := w.fsync(old); err != nil {
		return w.failLocked(err)
	}
	w.synced = w.written
	w.syncedCond.Broadcast()
	w.active = nil
	if err := w.retireLocked(old); err != nil {
		return err
	}
	return w.createSegmentLocked()
}

// retireLocked closes f, a segment that is no longer active, or leaves it
// to the background goroutine if that may be fsyncing f right now.
func (w *WAL) retireLocked(f segmentFile) error {
	if w.syncing {
		w.retired = append(w.retired, f)
		return nil
	}
	if err := f.Close(); err != nil {
		return w.failLocked(fmt.Errorf("wal: close %s: %w", f.Name(), err))
	}
	return nil
}

func (w *WAL) closeRetiredLocked() {
	for _, f := range w.retired {
		if err := f.Close(); err != nil {
			w.failLocked(fmt.Errorf("wal: close %s: %w", f.Name(), err))
		}
	}
	w.retired = w.retired[:0]
}

// syncOnceLocked fsyncs everything written so far, releasing mu during the
// fsync so writers can go on; writes that arrive meanwhile wait for the
// next call (group commit). Only the background goroutine calls it.
func (w *WAL) syncOnceLocked() {
	f, target := w.active, w.written
	if f == nil {
		return
	}
	w.syncing = true
	w.mu.Unlock()
	err := w.fsync(f)
	w.mu.Lock()
	w.syncing = false
	w.closeRetiredLocked()
	if err != nil {
		w.failLocked(err)
		return
	}
	// A failed WAL acknowledges nothing more, even what this fsync covered.
	if w.err == nil && target > w.synced {
		w.synced = target
		w.syncedCond.Broadcast()
	}
}

// flushLoop is the group-commit flusher of SyncBatch mode.
func (w *WAL) flushLoop() {
	defer close(w.done)
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		for w.synced == w.written && !w.closed && w.err == nil {
			w.workCond.Wait()
		}
		if w.err != nil || w.synced == w.written {
			return // failed, or closed with nothing pending
		}
		w.syncOnceLocked()
	}
}

// intervalLoop fsyncs every SyncInterval in SyncInterval mode.
func (w *WAL) intervalLoop() {
	defer close(w.done)
	t := time.NewTicker(w.opts.SyncInterval)
	defer t.Stop()
	stop := make(chan struct{})
	go func() {
		// Turn the condition into a channel for the select below.
		w.mu.Lock()
		for !w.closed && w.err == nil {
			w.workCond.Wait()
		}
		w.mu.Unlock()
		close(stop)
	}()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		w.mu.Lock()
		if w.err == nil && w.synced < w.written {
			w.syncOnceLocked()
		}
		w.mu.Unlock()
	}
}

func dirJoin(dir, name string) string { return dir + string(os.PathSeparator) + name }
