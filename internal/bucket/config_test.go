package bucket

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v2"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Config
		wantErr string // a substring of the error; "" for none
	}{
		{name: "empty", in: "", want: Config{}},
		{name: "null", in: "null", want: Config{}},
		{
			name: "s3 with every option",
			in: `
type: S3
config:
  bucket: aerie-blocks
  endpoint: 127.0.0.1:9000
  insecure: true
timeout: 10s
max_retries: 7
retry_min_backoff: 50ms
retry_max_backoff: 2s
max_parallel_gets: 32
`,
			want: Config{
				Type:            provS3,
				Config:          map[string]any{"bucket": "aerie-blocks", "endpoint": "127.0.0.1:9000", "insecure": true},
				Timeout:         10 * time.Second,
				MaxRetries:      7,
				RetryMinBackoff: 50 * time.Millisecond,
				RetryMaxBackoff: 2 * time.Second,
				MaxParallelGets: 32,
			},
		},
		{name: "type in lower case", in: "type: gcs", want: Config{Type: provGCS}},
		{
			name: "filesystem with a nested provider config",
			in:   "type: FILESYSTEM\nconfig:\n  directory: /srv/aerie\n  http_config: {idle_conn_timeout: 1m}",
			want: Config{Type: provFilesystem, Config: map[string]any{
				"directory":   "/srv/aerie",
				"http_config": map[any]any{"idle_conn_timeout": "1m"},
			}},
		},
		{name: "unknown type", in: "type: DROPBOX", wantErr: `type: unknown provider "DROPBOX" (want one of FILESYSTEM, S3, GCS, AZURE, SWIFT)`},
		{name: "type not a string", in: "type: [S3]", wantErr: "type: want a provider name"},
		{name: "unknown field", in: "type: S3\nretries: 3", wantErr: "field retries not found"},
		{name: "config not a mapping", in: "type: S3\nconfig: [a, b]", wantErr: "config: want a mapping"},
		{name: "config key not a string", in: "config: {1: a}", wantErr: "config: key 1 is not a string"},
		{name: "timeout without unit", in: "timeout: 30", wantErr: "timeout: want a duration with a unit"},
		{name: "timeout not a duration", in: "timeout: soon", wantErr: `timeout: "soon" is not a duration`},
		{name: "timeout negative", in: "timeout: -1s", wantErr: "timeout: -1s is outside [1ms, 1h0m0s]"},
		{name: "timeout too long", in: "timeout: 2h", wantErr: "timeout: 2h0m0s is outside"},
		{name: "max_retries not an integer", in: "max_retries: many", wantErr: "max_retries: want an integer, got many"},
		{name: "max_retries negative", in: "max_retries: -1", wantErr: "max_retries: -1 is outside [0, 100]"},
		{name: "max_retries too many", in: "max_retries: 1000", wantErr: "max_retries: 1000 is outside"},
		{name: "max_retries huge", in: "max_retries: 99999999999999999999", wantErr: "max_retries: want an integer"},
		{name: "retry_min_backoff bad", in: "retry_min_backoff: 1", wantErr: "retry_min_backoff: want a duration"},
		{name: "retry_max_backoff too long", in: "retry_max_backoff: 1h", wantErr: "retry_max_backoff: 1h0m0s is outside"},
		{name: "min backoff above max", in: "retry_min_backoff: 10s\nretry_max_backoff: 1s", wantErr: "retry_min_backoff (10s) is greater than retry_max_backoff (1s)"},
		{name: "max below the default min", in: "retry_max_backoff: 50ms", wantErr: "retry_min_backoff (100ms) is greater than retry_max_backoff (50ms)"},
		{name: "max_parallel_gets negative", in: "max_parallel_gets: -2", wantErr: "max_parallel_gets: -2 is outside [0, 4096]"},
		{name: "max_parallel_gets too many", in: "max_parallel_gets: 5000", wantErr: "max_parallel_gets: 5000 is outside"},
		{name: "not a mapping", in: "[1, 2]", wantErr: "bucket config: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "bucket config: ") {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
			// Marshalled and parsed again, it is the same config.
			out, err := yaml.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			again, err := ParseConfig(out)
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Fatalf("round trip through\n%s\ngave %+v, %v", out, again, err)
			}
		})
	}
}

// TestConfigInAerieConfig checks that Config works as a section of a
// larger YAML document.
func TestConfigInAerieConfig(t *testing.T) {
	var doc struct {
		Bucket *Config `yaml:"bucket"`
		Other  int     `yaml:"other"`
	}
	if err := yaml.UnmarshalStrict([]byte("other: 1\nbucket:\n  type: s3\n  max_retries: 2\n"), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Bucket == nil || doc.Bucket.Type != provS3 || doc.Bucket.MaxRetries != 2 {
		t.Fatalf("bucket section = %+v", doc.Bucket)
	}
	err := yaml.UnmarshalStrict([]byte("bucket:\n  max_parallel_gets: -1\n"), &doc)
	if err == nil || !strings.Contains(err.Error(), "max_parallel_gets") {
		t.Fatalf("error %v, want one naming max_parallel_gets", err)
	}
}

func TestProviderConfigFor(t *testing.T) {
	dataDir := filepath.FromSlash("/data")
	tests := []struct {
		name    string
		cfg     Config
		dataDir string
		want    map[string]any
		wantErr string
	}{
		{name: "default", cfg: Config{}, dataDir: dataDir, want: map[string]any{"directory": filepath.Join(dataDir, "bucket")}},
		{name: "relative directory", cfg: Config{Type: provFilesystem, Config: map[string]any{"directory": "objs"}}, dataDir: dataDir, want: map[string]any{"directory": filepath.Join(dataDir, "objs")}},
		{name: "absolute directory", cfg: Config{Type: provFilesystem, Config: map[string]any{"directory": filepath.FromSlash("/srv/b")}}, dataDir: dataDir, want: map[string]any{"directory": filepath.FromSlash("/srv/b")}},
		{name: "no data directory", cfg: Config{}, wantErr: `config.directory: "bucket" is relative and there is no data directory`},
		{name: "directory not a string", cfg: Config{Config: map[string]any{"directory": 3}}, dataDir: dataDir, wantErr: "config.directory: want a path, got 3"},
		{name: "s3 retries off", cfg: Config{Type: provS3, Config: map[string]any{"bucket": "b"}}, want: map[string]any{"bucket": "b", "max_retries": 1}},
		{name: "s3 retries set to 1", cfg: Config{Type: provS3, Config: map[string]any{"max_retries": 1}}, want: map[string]any{"max_retries": 1}},
		{name: "s3 retries on", cfg: Config{Type: provS3, Config: map[string]any{"max_retries": 4}}, wantErr: "config.max_retries: 4; Aerie retries S3 requests itself"},
		{name: "gcs retries kept", cfg: Config{Type: provGCS, Config: map[string]any{"max_retries": 4}}, want: map[string]any{"max_retries": 4}},
		{name: "gcs retries off", cfg: Config{Type: provGCS}, want: map[string]any{"max_retries": 1}},
		{name: "azure retries off", cfg: Config{Type: provAzure}, want: map[string]any{"max_retries": 1}},
		{name: "swift untouched", cfg: Config{Type: provSwift, Config: map[string]any{"container_name": "c"}}, want: map[string]any{"container_name": "c"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := providerConfigFor(tc.cfg.withDefaults(), tc.dataDir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
			if tc.cfg.Config != nil && reflect.ValueOf(got).Pointer() == reflect.ValueOf(tc.cfg.Config).Pointer() {
				t.Fatal("the caller's provider config was modified in place")
			}
		})
	}
}

// TestOpenDefault opens the zero Config: the filesystem provider under
// <dataDir>/bucket.
func TestOpenDefault(t *testing.T) {
	dir := t.TempDir()
	b, err := Open(Config{}, dir, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Raw().Provider() != "FILESYSTEM" {
		t.Fatalf("provider %s", b.Raw().Provider())
	}
	ctx := context.Background()
	data := []byte("0123456789")
	if err := b.Upload(ctx, "blocks/01/meta.json", data); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "bucket", "blocks", "01", "meta.json")); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("file under <dataDir>/bucket = %q, %v", got, err)
	}
	if got, err := b.Get(ctx, "blocks/01/meta.json"); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("Get = %q, %v", got, err)
	}
	if got, err := b.GetRange(ctx, "blocks/01/meta.json", 3, 4); err != nil || string(got) != "3456" {
		t.Fatalf("GetRange = %q, %v", got, err)
	}
	var names []string
	if err := b.Iter(ctx, "", func(n string) error { names = append(names, n); return nil }, true); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(names, []string{"blocks/01/meta.json"}) {
		t.Fatalf("Iter = %q", names)
	}
	if ok, err := b.Exists(ctx, "blocks/01/meta.json"); !ok || err != nil {
		t.Fatalf("Exists = %v, %v", ok, err)
	}
	if err := b.Delete(ctx, "blocks/01/meta.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "blocks/01/meta.json"); !b.IsObjNotFoundErr(err) {
		t.Fatalf("Get after Delete: %v, want not found", err)
	}
}

func TestOpenErrors(t *testing.T) {
	reg := prometheus.NewRegistry()
	b, err := Open(Config{}, t.TempDir(), slog.New(slog.DiscardHandler), reg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	tests := []struct {
		name    string
		cfg     Config
		reg     prometheus.Registerer
		wantErr string
	}{
		{name: "unknown type", cfg: Config{Type: "ftp"}, wantErr: `type: unknown provider "FTP"`},
		{name: "bad limit", cfg: Config{MaxRetries: 101}, wantErr: "max_retries: 101 is outside"},
		{name: "s3 without endpoint", cfg: Config{Type: provS3, Config: map[string]any{"bucket": "b"}}, wantErr: "open S3 provider: no s3 endpoint"},
		{name: "s3 unknown option", cfg: Config{Type: provS3, Config: map[string]any{"endpoint": "x", "bukket": "b"}}, wantErr: "open S3 provider:"},
		{name: "metrics registered twice", cfg: Config{}, reg: reg, wantErr: "register metrics"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Open(tc.cfg, t.TempDir(), nil, tc.reg)
			if err == nil {
				b.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one with %q", err, tc.wantErr)
			}
		})
	}
}

// TestKitLogger checks that objstore's go-kit lines reach slog with their
// level and message.
func TestKitLogger(t *testing.T) {
	var buf bytes.Buffer
	l := kitLogger{slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	_ = l.Log("level", "warn", "msg", "could not guess size", "name", "obj", "odd")
	got := buf.String()
	for _, want := range []string{"level=WARN", `msg="could not guess size"`, "name=obj", "!BADKEY=odd"} {
		if !strings.Contains(got, want) {
			t.Errorf("log line %q lacks %q", got, want)
		}
	}
}

// FuzzConfig checks that the parser never panics, is deterministic, and
// that what it accepts survives a round trip through MarshalYAML.
func FuzzConfig(f *testing.F) {
	for _, s := range []string{
		"",
		"type: S3\nconfig:\n  bucket: b\n  endpoint: e\ntimeout: 10s\nmax_retries: 3\nretry_min_backoff: 1ms\nretry_max_backoff: 1s\nmax_parallel_gets: 8\n",
		"type: filesystem\nconfig: {directory: /x}",
		"config: {http_config: {idle_conn_timeout: 1m}, list: [1, 2]}",
		"timeout: 30",
		"max_retries: 1e3",
		"type: [a]",
		"config: {1: 2}",
		"{",
		"retry_max_backoff: 50ms",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c1, err1 := ParseConfig(data)
		c2, err2 := ParseConfig(data)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("two parses disagree: %v, %v", err1, err2)
		}
		if err1 != nil {
			if err1.Error() != err2.Error() {
				t.Fatalf("two parses give different errors: %v, %v", err1, err2)
			}
			return
		}
		out1, err := yaml.Marshal(c1)
		if err != nil {
			t.Fatalf("marshal %+v: %v", c1, err)
		}
		out2, _ := yaml.Marshal(c2)
		if !bytes.Equal(out1, out2) {
			t.Fatalf("two parses differ:\n%s\n%s", out1, out2)
		}
		c3, err := ParseConfig(out1)
		if err != nil {
			t.Fatalf("reparse of\n%s\nfailed: %v", out1, err)
		}
		out3, _ := yaml.Marshal(c3)
		if !bytes.Equal(out1, out3) {
			t.Fatalf("round trip changed\n%s\nto\n%s", out1, out3)
		}
	})
}
