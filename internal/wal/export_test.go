package wal

import "encoding/binary"

// Exported for the benchmarks of package wal_test, which import head.

// AppendFramesV1 appends recs as version 1 frames, one per record.
func AppendFramesV1(dst []byte, recs [][]byte) []byte {
	for _, r := range recs {
		dst = appendFrameV1(dst, r)
	}
	return dst
}

// AppendBatch appends recs as Log writes them (version 2).
func AppendBatch(dst, scratch []byte, recs [][]byte) (out, scratchOut []byte) {
	return appendBatch(dst, scratch, recs)
}

// AppendCheckpointFrames appends recs as a checkpoint packs them: frames
// of about checkpointFrameSize bytes of payload.
func AppendCheckpointFrames(dst, payload []byte, recs [][]byte) (out, payloadOut []byte) {
	for _, r := range recs {
		if len(payload) > 0 && len(payload)+binary.MaxVarintLen32+len(r) > checkpointFrameSize {
			dst = appendFrame(dst, payload, FrameZstd)
			payload = payload[:0]
		}
		payload = appendPayloadRecord(payload, r)
	}
	return dst, payload
}

// FlushCheckpointFrame appends the last frame of AppendCheckpointFrames.
func FlushCheckpointFrame(dst, payload []byte) []byte {
	if len(payload) == 0 {
		return dst
	}
	return appendFrame(dst, payload, FrameZstd)
}

// ForEachRecord calls fn for every record of the frames in b, whose file
// format is version.
func ForEachRecord(b []byte, version byte, fn func(rec []byte)) error {
	fr := frameReader{version: version}
	for len(b) > 0 {
		n := int(binary.BigEndian.Uint32(b))
		data := b[RecordHeaderSize : RecordHeaderSize+n]
		b = b[RecordHeaderSize+n:]
		payload, rec, err := fr.payload(data)
		if err != nil {
			return err
		}
		if rec != nil {
			fn(rec)
		}
		for len(payload) > 0 {
			rec, payload = nextRecord(payload)
			fn(rec)
		}
	}
	return nil
}
