package cache

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"github.com/aerie-db/aerie/internal/checksum"
)

// slabFile is the cache file: slots of slabSize bytes, written a slab at a
// time and read by whole blocks, with O_DIRECT where the filesystem takes
// it (the page cache would only hold a second copy).
type slabFile struct {
	f        *os.File
	direct   bool
	slabSize int
}

func openSlabFile(path string, nslots, slabSize int, direct bool) (*slabFile, error) {
	size := int64(nslots) * int64(slabSize)
	flags := os.O_RDWR | os.O_CREATE
	var f *os.File
	var err error
	if direct {
		f, err = os.OpenFile(path, flags|syscall.O_DIRECT, 0o644)
		if err != nil {
			direct = false // tmpfs and some others refuse it
		}
	}
	if !direct {
		f, err = os.OpenFile(path, flags, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("cache: open %s: %w", path, err)
	}
	if st, err := f.Stat(); err != nil || st.Size() != size {
		if err := f.Truncate(size); err != nil {
			f.Close()
			return nil, fmt.Errorf("cache: size %s to %d bytes: %w", path, size, err)
		}
	}
	return &slabFile{f: f, direct: direct, slabSize: slabSize}, nil
}

// writeSlab writes a whole slab (an aligned buffer of slabSize bytes).
func (f *slabFile) writeSlab(slot int, b []byte) error {
	if _, err := f.f.WriteAt(b, int64(slot)*int64(len(b))); err != nil {
		return fmt.Errorf("cache: write slab %d: %w", slot, err)
	}
	return nil
}

// readBlocks reads data blocks [b0, b1) of the slab in slot (whose data
// part starts at dataOff) into buf (aligned, at least a slab long).
func (f *slabFile) readBlocks(slot, dataOff, b0, b1 int, buf []byte) ([]byte, error) {
	n := (b1 - b0) * BlockSize
	off := int64(slot)*int64(f.slabSize) + int64(dataOff) + int64(b0)*BlockSize
	if _, err := f.f.ReadAt(buf[:n], off); err != nil {
		return nil, fmt.Errorf("cache: read slab %d at %d: %w", slot, off, err)
	}
	return buf[:n], nil
}

// readAt reads len(buf) bytes (aligned) at off.
func (f *slabFile) readAt(buf []byte, off int64) error {
	_, err := f.f.ReadAt(buf, off)
	return err
}

func (f *slabFile) close() error {
	err := f.f.Sync()
	return errors.Join(err, f.f.Close())
}

// alignedBuf returns n bytes starting at a BlockSize boundary, as O_DIRECT
// needs.
func alignedBuf(n int) []byte {
	b := make([]byte, n+BlockSize)
	a := int(uintptr(unsafe.Pointer(&b[0])) & (BlockSize - 1))
	off := 0
	if a != 0 {
		off = BlockSize - a
	}
	return b[off : off+n : off+n]
}

func crc32c(b []byte) uint32 { return checksum.CRC32C(b) }
