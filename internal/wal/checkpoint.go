package wal

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
)

// Checkpoint writes checkpoint.<before> holding the records recs yields
// (the caller passes what is still live in segments < before: series and
// group definitions), then, if carry is not nil, what carry yields for
// every record of the newest checkpoint and of the segments below before,
// in log order (the caller keeps the rows not yet in durable blocks; rec is
// valid only during the call). Then it deletes the segments below before
// and older checkpoints. before must not exceed the active segment's index
// (Cut first to checkpoint everything written so far), nor be lower than
// the newest checkpoint's.
//
// The checkpoint is written to a temporary file, fsync'd, renamed and the
// directory fsync'd before anything is deleted, so a crash leaves either the
// old state or the new one. If recs, carry or yield returns an error, or a
// file it reads is corrupt, nothing is changed and Checkpoint returns it.
func (w *WAL) Checkpoint(before int, recs func(yield func([]byte) error) error, carry func(rec []byte, yield func([]byte) error) error) error {
	w.maintMu.Lock()
	defer w.maintMu.Unlock()
	w.mu.Lock()
	if err := w.usableLocked(); err != nil {
		w.mu.Unlock()
		return err
	}
	limit := w.nextIdx
	if w.active != nil {
		limit = w.activeIdx
	}
	w.mu.Unlock()
	if before < 1 || before > limit {
		return fmt.Errorf("wal: checkpoint before segment %d: must be in [1, %d]", before, limit)
	}
	l, err := listDir(w.dir)
	if err != nil {
		return fmt.Errorf("wal: list directory: %w", err)
	}
	if n := len(l.checkpoints); n > 0 && l.checkpoints[n-1] > before {
		return fmt.Errorf("wal: checkpoint before segment %d: newer checkpoint %s exists",
			before, CheckpointName(w.dir, l.checkpoints[n-1]))
	}

	if carry != nil {
		defs := recs
		recs = func(yield func([]byte) error) error {
			if err := defs(yield); err != nil {
				return err
			}
			return w.carry(l, before, func(rec []byte) error { return carry(rec, yield) })
		}
	}
	name := CheckpointName(w.dir, before)
	if err := w.writeCheckpoint(name, recs); err != nil {
		return err
	}
	w.logger.Info("WAL checkpoint written", "checkpoint", name)

	for _, s := range l.segments {
		if s < before {
			if err := os.Remove(SegmentName(w.dir, s)); err != nil {
				return fmt.Errorf("wal: delete segment after checkpoint: %w", err)
			}
		}
	}
	for _, c := range l.checkpoints {
		if c < before {
			if err := os.Remove(CheckpointName(w.dir, c)); err != nil {
				return fmt.Errorf("wal: delete old checkpoint: %w", err)
			}
		}
	}
	if err := syncDir(w.dir); err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	return nil
}

// carry calls fn for every record of the newest checkpoint in l and of the
// segments of l from its index to before-1, in log order. The files are
// read strictly: they are complete (a torn tail of the last segment of an
// earlier process was truncated by Replay), so anything bad is corruption.
func (w *WAL) carry(l dirListing, before int, fn func(rec []byte) error) error {
	var fr frameReader
	ckpt := 0
	if n := len(l.checkpoints); n > 0 {
		ckpt = l.checkpoints[n-1]
		if err := w.replayFile(&fr, CheckpointName(w.dir, ckpt), ckpt-1, false, -1, func(_ int, rec []byte) error { return fn(rec) }); err != nil {
			return err
		}
	}
	for _, s := range l.segments {
		if s < ckpt || s >= before {
			continue
		}
		if err := w.replayFile(&fr, SegmentName(w.dir, s), s, false, -1, func(_ int, rec []byte) error { return fn(rec) }); err != nil {
			return err
		}
	}
	return nil
}

// writeCheckpoint writes the checkpoint file name atomically: tmp → fsync
// → rename → fsync dir.
func (w *WAL) writeCheckpoint(name string, recs func(yield func([]byte) error) error) (err error) {
	tmp := name + ".tmp"
	f, err := w.create(tmp)
	if err != nil {
		return fmt.Errorf("wal: create checkpoint: %w", err)
	}
	defer func() {
		if f != nil {
			f.Close()
		}
		if err != nil {
			os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if _, err := bw.Write(appendSegmentHeader(nil)); err != nil {
		return fmt.Errorf("wal: write checkpoint: %w", err)
	}
	// Records are packed into frames of about checkpointFrameSize bytes of
	// payload, which compress far better than a frame per record.
	var payload, frame []byte
	flush := func() error {
		if len(payload) == 0 {
			return nil
		}
		frame = appendFrame(frame[:0], payload, FrameZstd)
		payload = payload[:0]
		if _, err := bw.Write(frame); err != nil {
			return fmt.Errorf("wal: write checkpoint: %w", err)
		}
		return nil
	}
	yield := func(rec []byte) error {
		if err := checkRecordSize(rec); err != nil {
			return fmt.Errorf("wal: checkpoint record: %w", err)
		}
		if len(payload) > 0 && len(payload)+binary.MaxVarintLen32+len(rec) > checkpointFrameSize {
			if err := flush(); err != nil {
				return err
			}
		}
		payload = appendPayloadRecord(payload, rec)
		return nil
	}
	if err := recs(yield); err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("wal: write checkpoint: %w", err)
	}
	if err := w.fsync(f); err != nil {
		return err
	}
	cerr := f.Close()
	f = nil
	if cerr != nil {
		return fmt.Errorf("wal: close checkpoint: %w", cerr)
	}
	if err := os.Rename(tmp, name); err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	if err := syncDir(w.dir); err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	return nil
}
