package harness

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// DiskUsage returns the bytes of the regular files under dir, in all and
// by the top-level entry of dir they are in. Files removed during the walk
// (a merge, a flush) are skipped. A file counts its size or, if fewer,
// the bytes the file system holds for it: a sparse file (Aerie's results
// cache is created at its capacity) counts what was written, not its
// length.
func DiskUsage(dir string) (total int64, byTop map[string]int64, err error) {
	byTop = map[string]int64{}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		size := info.Size()
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			size = min(size, st.Blocks*512) // st_blocks is in 512-byte units
		}
		total += size
		rel, _ := filepath.Rel(dir, path)
		top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		byTop[top] += size
		return nil
	})
	return total, byTop, err
}

// DirSize is DiskUsage's total, 0 where dir cannot be read.
func DirSize(dir string) int64 {
	n, _, err := DiskUsage(dir)
	if err != nil {
		return 0
	}
	return n
}

// CopyDir copies the regular files and directories of src into dst,
// which must not exist.
func CopyDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type().IsRegular():
			return copyFile(path, to)
		}
		return nil
	})
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
