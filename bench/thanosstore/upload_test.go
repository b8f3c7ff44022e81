package thanosstore

import (
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thanos-io/objstore"
	"github.com/thanos-io/objstore/providers/filesystem"
)

func TestUploadCopiesBlockAsIs(t *testing.T) {
	f := floatBlock(t)
	ms := oneSeries
	want := querierSelect(t, f.dir, math.MinInt64, math.MaxInt64, ms...)
	tests := []struct {
		name   string
		prefix string
		bucket func(t *testing.T) objstore.Bucket
	}{
		{"in memory", "tenant-1/blocks", func(*testing.T) objstore.Bucket { return objstore.NewInMemBucket() }},
		{"filesystem", "", func(t *testing.T) objstore.Bucket {
			bkt, err := filesystem.NewBucket(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return bkt
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			bkt := tt.bucket(t)
			if err := Upload(ctx, bkt, tt.prefix, f.dir); err != nil {
				t.Fatal(err)
			}
			for _, file := range []string{"meta.json", "index", "chunks/000001"} {
				rc, err := bkt.Get(ctx, path.Join(tt.prefix, f.id, file))
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(rc)
				rc.Close()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, readFile(t, filepath.Join(f.dir, filepath.FromSlash(file)))) {
					t.Errorf("%s differs from the block's file", file)
				}
			}
			b, err := OpenBlock(ctx, bkt, tt.prefix, f.id, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := b.Select(ctx, math.MinInt64, math.MaxInt64, ms...)
			if err != nil {
				t.Fatal(err)
			}
			if d := diffSeries(got, want); d != "" {
				t.Error(d)
			}
		})
	}
}

func TestUploadRejects(t *testing.T) {
	f := floatBlock(t)
	copyBlock := func(t *testing.T, dir string, meta func([]byte) []byte) string {
		t.Helper()
		if err := os.CopyFS(dir, os.DirFS(f.dir)); err != nil {
			t.Fatal(err)
		}
		m := filepath.Join(dir, "meta.json")
		if err := os.WriteFile(m, meta(readFile(t, m)), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	same := func(b []byte) []byte { return b }
	tests := []struct {
		name string
		dir  func(t *testing.T) string
		want string
	}{
		{"directory not named for the block", func(t *testing.T) string {
			return copyBlock(t, filepath.Join(t.TempDir(), "renamed"), same)
		}, "not the block's ULID"},
		{"tombstones", func(t *testing.T) string {
			return copyBlock(t, filepath.Join(t.TempDir(), f.id), func(b []byte) []byte {
				return bytes.Replace(b, []byte(`"stats": {`), []byte(`"stats": {"numTombstones": 2,`), 1)
			})
		}, "tombstones"},
		{"meta version", func(t *testing.T) string {
			return copyBlock(t, filepath.Join(t.TempDir(), f.id), func(b []byte) []byte {
				return bytes.Replace(b, []byte(`"version": 1`), []byte(`"version": 7`), 1)
			})
		}, "meta version 7"},
		{"no block", func(t *testing.T) string { return t.TempDir() }, "meta.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bkt := objstore.NewInMemBucket()
			err := Upload(context.Background(), bkt, "blocks", tt.dir(t))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if objs := bkt.Objects(); len(objs) > 0 {
				t.Errorf("%d objects uploaded before the error", len(objs))
			}
		})
	}
}
