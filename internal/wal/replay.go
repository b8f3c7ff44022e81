package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Replay calls fn for every record in log order: first the records of the
// newest checkpoint, then those of every segment from the checkpoint's index
// on. For checkpoint.N, seg is N-1 (the last segment it covers); otherwise
// seg is the record's segment index. rec is valid only during fn. If fn
// returns an error Replay stops and returns it, wrapped.
//
// A bad record at the end of the last segment written by an earlier process
// is a torn write: Replay truncates the segment before it, logs it, and goes
// on. Any other bad record or header stops Replay with a *CorruptionError;
// Repair can then cut the log there. Call Replay again after Repair: it
// starts over from the checkpoint.
//
// Replay should run before the first Log. Records logged while it runs may or
// may not be replayed.
func (w *WAL) Replay(fn func(seg int, rec []byte) error) error {
	w.maintMu.Lock()
	defer w.maintMu.Unlock()
	l, err := listDir(w.dir)
	if err != nil {
		return fmt.Errorf("wal: list directory: %w", err)
	}
	w.mu.Lock()
	if err := w.usableLocked(); err != nil {
		w.mu.Unlock()
		return err
	}
	tailIdx, activeIdx, activeSize := w.tailIdx, 0, int64(0)
	if w.active != nil {
		activeIdx, activeSize = w.activeIdx, w.activeSize
	}
	w.mu.Unlock()

	var fr frameReader
	ckpt := 0
	if n := len(l.checkpoints); n > 0 {
		ckpt = l.checkpoints[n-1]
		if err := w.replayFile(&fr, CheckpointName(w.dir, ckpt), ckpt-1, false, -1, fn); err != nil {
			return err
		}
	}
	segs := l.segments
	for len(segs) > 0 && segs[0] < ckpt {
		segs = segs[1:] // left over from a checkpoint interrupted while deleting
	}
	for i, s := range segs {
		want := ckpt
		if i > 0 {
			want = segs[i-1] + 1
		}
		if want > 0 && s != want {
			return fmt.Errorf("wal: segment %s is missing", SegmentName(w.dir, want))
		}
		limit := int64(-1)
		if s == activeIdx {
			limit = activeSize
		}
		if err := w.replayFile(&fr, SegmentName(w.dir, s), s, s == tailIdx && s != activeIdx, limit, fn); err != nil {
			return err
		}
	}
	return nil
}

// replayFile replays one segment or checkpoint file, reading at most limit
// bytes if limit >= 0. If tail is set, a torn tail is truncated instead of
// being reported.
func (w *WAL) replayFile(fr *frameReader, path string, seg int, tail bool, limit int64, fn func(int, []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	size := st.Size()
	if limit >= 0 && limit < size {
		size = limit
	}
	fr.reset(f, size)
	corrupt := func(off int64, err error) error {
		return &CorruptionError{Segment: path, Offset: off, Err: err}
	}

	if err := fr.readHeader(); err != nil {
		var ie ioErr
		if errors.As(err, &ie) {
			return fmt.Errorf("wal: read %s: %w", path, err)
		}
		// A header that never reached the disk (short, or zeros) in the
		// tail segment is torn like any record.
		if !tail || !(errors.Is(err, errTruncatedHeader) || headerZero(f)) {
			return corrupt(0, err)
		}
		return w.tornTail(fr, path, 0, st.Size(), err)
	}
	for {
		data, start, err := fr.next()
		switch {
		case err == nil:
			// A frame whose checksum matches but whose content does not
			// decode was written so: corruption, never a torn write.
			payload, rec, err := fr.payload(data)
			if err != nil {
				return corrupt(start, err)
			}
			if rec != nil {
				if err := fn(seg, rec); err != nil {
					return fmt.Errorf("wal: replay %s: %w", path, err)
				}
			}
			for len(payload) > 0 {
				rec, payload = nextRecord(payload)
				if err := fn(seg, rec); err != nil {
					return fmt.Errorf("wal: replay %s: %w", path, err)
				}
			}
			continue
		case err == io.EOF:
			return nil
		case errors.As(err, new(ioErr)):
			return fmt.Errorf("wal: read %s: %w", path, err)
		case !tail:
			return corrupt(start, err)
		}
		return w.tornTail(fr, path, start, st.Size(), err)
	}
}

// tornTail decides whether the bad frame at off (or the bad header, if off
// is 0) in the tail segment is a torn write, and truncates the file there if
// so. It is torn unless a valid record follows it: following the declared
// lengths from the end of the bad frame, the frames are all bad and the
// chain ends at the end of the file or at a length it cannot follow.
func (w *WAL) tornTail(fr *frameReader, path string, off, fileSize int64, cause error) error {
	if off == 0 || errors.Is(cause, errChecksum) {
		for {
			_, _, err := fr.next()
			if err == nil {
				return &CorruptionError{Segment: path, Offset: off, Err: fmt.Errorf("%w, followed by valid records", cause)}
			}
			if errors.As(err, new(ioErr)) {
				return fmt.Errorf("wal: read %s: %w", path, err)
			}
			if !errors.Is(err, errChecksum) {
				break
			}
		}
	}
	w.logger.Warn("Truncating torn tail of WAL segment",
		"segment", path, "offset", off, "dropped_bytes", fileSize-off, "cause", cause)
	if err := w.truncateSegment(path, off); err != nil {
		return fmt.Errorf("wal: truncate torn tail: %w", err)
	}
	return nil
}

// headerZero reports whether the file header consists of zero bytes.
func headerZero(f *os.File) bool {
	var h [SegmentHeaderSize]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		return false
	}
	return h == [SegmentHeaderSize]byte{}
}

// truncateSegment cuts the segment at path to off bytes and fsyncs it. If
// off falls inside the header, the header is written anew.
func (w *WAL) truncateSegment(path string, off int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if off < SegmentHeaderSize {
		if err = f.Truncate(0); err == nil {
			_, err = f.Write(appendSegmentHeader(nil))
		}
	} else {
		err = f.Truncate(off)
	}
	if err == nil {
		err = w.fsync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Repair cuts the log at the corruption that err (a *CorruptionError from
// Replay) reports: it truncates that segment before the bad record and
// deletes every later segment, like Prometheus' wlog.Repair. Records after
// the corruption are lost; the caller decides whether that is acceptable. A
// corrupt checkpoint cannot be repaired. New records go to a new segment
// after the repaired one.
func (w *WAL) Repair(err error) error {
	var cerr *CorruptionError
	if !errors.As(err, &cerr) {
		return fmt.Errorf("wal: cannot repair: %w", err)
	}
	base := filepath.Base(cerr.Segment)
	if strings.HasPrefix(base, CheckpointPrefix) {
		return fmt.Errorf("wal: cannot repair corrupt checkpoint %s", cerr.Segment)
	}
	idx, ok := parseIndex(base)
	if !ok || filepath.Clean(filepath.Dir(cerr.Segment)) != filepath.Clean(w.dir) || cerr.Offset < 0 {
		return fmt.Errorf("wal: corruption error %q does not name a segment of %s", cerr.Error(), w.dir)
	}

	w.maintMu.Lock()
	defer w.maintMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usableLocked(); err != nil {
		return err
	}
	if st, err := os.Stat(cerr.Segment); err != nil {
		return fmt.Errorf("wal: %w", err)
	} else if cerr.Offset > st.Size() {
		return fmt.Errorf("wal: corruption offset %d is past the end of %s (%d bytes)", cerr.Offset, cerr.Segment, st.Size())
	}
	w.logger.Warn("Repairing WAL: truncating segment and deleting later ones",
		"segment", cerr.Segment, "offset", cerr.Offset, "cause", cerr.Err)

	if w.active != nil && w.activeIdx >= idx {
		// The active segment is about to be truncated or deleted.
		if err := w.fsync(w.active); err != nil {
			return w.failLocked(err)
		}
		w.synced = w.written
		w.syncedCond.Broadcast()
		if err := w.retireLocked(w.active); err != nil {
			return err
		}
		w.active = nil
	}
	l, lerr := listDir(w.dir)
	if lerr != nil {
		return fmt.Errorf("wal: list directory: %w", lerr)
	}
	for _, s := range l.segments {
		if s <= idx {
			continue
		}
		if err := os.Remove(SegmentName(w.dir, s)); err != nil {
			return fmt.Errorf("wal: delete segment: %w", err)
		}
	}
	if err := w.truncateSegment(cerr.Segment, cerr.Offset); err != nil {
		return fmt.Errorf("wal: truncate %s: %w", cerr.Segment, err)
	}
	if err := syncDir(w.dir); err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	w.tailIdx, w.nextIdx = idx, idx+1
	return nil
}
