//go:build unix

package block

import (
	"os"
	"syscall"
)

// mapFile maps the size bytes of f read-only and shared (nil for an empty
// file). The mapping outlives f's descriptor.
func mapFile(f *os.File, size int64) ([]byte, error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, nil
	}
	return syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
}

func unmapFile(b []byte) { _ = syscall.Munmap(b) }
