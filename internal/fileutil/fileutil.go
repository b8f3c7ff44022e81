// Package fileutil holds the durable-file steps every format of the data
// directory needs: a new file is written to a temporary name, fsync'd,
// renamed over the old one and the directory fsync'd (STYLE.md), so a
// crash leaves either the old or the new file, never a torn one.
package fileutil

import (
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces path with data: tmp → fsync → rename → fsync dir.
func WriteFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir fsyncs a directory, making renames and creations in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
