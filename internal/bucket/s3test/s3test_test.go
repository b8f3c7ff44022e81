package s3test_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/aerie-db/aerie/internal/bucket"
	"github.com/aerie-db/aerie/internal/bucket/s3test"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestStart checks that the server takes an object through the S3
// provider and that it lands in the posix backend's directory.
func TestStart(t *testing.T) {
	srv := s3test.Start(t)
	b, err := bucket.Open(srv.Config(), t.TempDir(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	data := []byte("hello, bucket")
	if err := b.Upload(ctx, "dir/obj", data); err != nil {
		t.Fatal(err)
	}
	got, err := b.Get(ctx, "dir/obj")
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get = %q, %v; want %q", got, err, data)
	}
	onDisk, err := os.ReadFile(filepath.Join(srv.Dir, srv.Bucket, "dir", "obj"))
	if err != nil || !bytes.Equal(onDisk, data) {
		t.Fatalf("posix backend file = %q, %v; want %q", onDisk, err, data)
	}
}
