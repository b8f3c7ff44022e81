package bucket

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/thanos-io/objstore"
)

// durableFS is objstore's filesystem bucket with atomic, durable uploads:
// an object is written to a temporary name beside it, fsync'd, renamed
// over its name, and its directory fsync'd. objstore's own Upload writes
// the file in place without an fsync: a crash would leave a torn object
// under its final name, and a power loss could lose an object whose local
// copy was already deleted.
type durableFS struct {
	objstore.Bucket
	root string
}

var tmpSeq atomic.Uint64

func (b durableFS) Upload(ctx context.Context, name string, r io.Reader, _ ...objstore.ObjectUploadOption) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	file := filepath.Join(b.root, filepath.FromSlash(name))
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.tmp-%d-%d", file, os.Getpid(), tmpSeq.Add(1))
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = io.Copy(f, r); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, file); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
