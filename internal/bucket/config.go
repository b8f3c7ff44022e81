package bucket

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/thanos-io/objstore"
	"github.com/thanos-io/objstore/providers/azure"
	"github.com/thanos-io/objstore/providers/filesystem"
	"github.com/thanos-io/objstore/providers/gcs"
	"github.com/thanos-io/objstore/providers/s3"
	"github.com/thanos-io/objstore/providers/swift"
	"go.yaml.in/yaml/v2"
)

// Provider names an object-storage provider, spelled as in objstore's own
// client config: FILESYSTEM, S3, GCS, AZURE or SWIFT. YAML accepts any
// case; Config.Validate upper-cases it. The empty Provider is FILESYSTEM.
//
// The names are unexported constants because docs/format/bucket.md's test
// (internal/formatdoc) lists every exported constant of this package as a
// format constant; callers write the name, as in YAML: Config{Type: "S3"}.
type Provider string

const (
	provFilesystem Provider = "FILESYSTEM"
	provS3         Provider = "S3"
	provGCS        Provider = "GCS"
	provAzure      Provider = "AZURE"
	provSwift      Provider = "SWIFT"
)

var providers = []Provider{provFilesystem, provS3, provGCS, provAzure, provSwift}

func init() {
	// minio-go, under the S3 provider, sleeps its backoff after every
	// failed attempt, the last one included: with its retries off
	// (max_retries 1, invariant 6) a failed request would still wait up to
	// DefaultRetryCap (1 s) before returning. Bucket is the only retry
	// layer, so minio-go waits not at all. The variable is read only by
	// minio-go's request loop.
	minio.DefaultRetryCap = 0
}

// Defaults of Aerie's own options; a zero field of Config means its default.
const (
	defaultTimeout         = 30 * time.Second
	defaultMaxRetries      = 5
	defaultRetryMinBackoff = 100 * time.Millisecond
	defaultRetryMaxBackoff = 5 * time.Second
	defaultMaxParallelGets = 16
)

// Limits that Validate enforces.
const (
	maxTimeout         = time.Hour
	maxMaxRetries      = 100
	maxBackoff         = 5 * time.Minute
	maxMaxParallelGets = 4096
)

// Config is the bucket section of Aerie's configuration. Its YAML has the
// shape of objstore's client config, plus Aerie's options:
//
//	type: S3                 # FILESYSTEM (the default), S3, GCS, AZURE or SWIFT
//	config:                  # the provider's own options, passed through
//	  bucket: aerie-blocks
//	  endpoint: s3.eu-west-1.amazonaws.com
//	timeout: 30s             # per request (attempt)
//	max_retries: 5           # retries after the first attempt
//	retry_min_backoff: 100ms
//	retry_max_backoff: 5s
//	max_parallel_gets: 16
//
// The zero Config is the filesystem provider under <data dir>/bucket. A
// filesystem directory that is relative is taken from the data directory.
type Config struct {
	// Type is the provider; empty means Filesystem.
	Type Provider
	// Config is the provider's own config, marshalled back to YAML for the
	// provider's constructor. Nested maps may have any key type YAML gives.
	Config map[string]any

	// Timeout bounds each attempt of a request, including reading its body.
	Timeout time.Duration
	// MaxRetries is how many attempts may follow the first.
	MaxRetries int
	// RetryMinBackoff and RetryMaxBackoff bound the full-jitter backoff:
	// the wait before retry n is uniform in [0, min(max, min·2^n)].
	RetryMinBackoff time.Duration
	RetryMaxBackoff time.Duration
	// MaxParallelGets bounds the Get and GetRange attempts in flight.
	MaxParallelGets int
}

// rawConfig is Config as YAML gives it, so that every conversion error can
// name its field: yaml.v2's own type errors name only a line.
type rawConfig struct {
	Type            any `yaml:"type"`
	Config          any `yaml:"config"`
	Timeout         any `yaml:"timeout"`
	MaxRetries      any `yaml:"max_retries"`
	RetryMinBackoff any `yaml:"retry_min_backoff"`
	RetryMaxBackoff any `yaml:"retry_max_backoff"`
	MaxParallelGets any `yaml:"max_parallel_gets"`
}

// ParseConfig parses a bucket config from YAML; unknown fields are errors.
// Empty input is the zero Config.
func ParseConfig(data []byte) (Config, error) {
	var c Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		if strings.HasPrefix(err.Error(), "bucket config: ") {
			return Config{}, err
		}
		return Config{}, fmt.Errorf("bucket config: %w", err)
	}
	return c, nil
}

// UnmarshalYAML implements yaml.Unmarshaler; it also validates.
func (c *Config) UnmarshalYAML(unmarshal func(any) error) error {
	var raw rawConfig
	if err := unmarshal(&raw); err != nil {
		return err
	}
	var out Config
	var err error
	switch v := raw.Type.(type) {
	case nil:
	case string:
		out.Type = Provider(v)
	default:
		return fmt.Errorf("bucket config: type: want a provider name, got %v", v)
	}
	if out.Config, err = providerConfig(raw.Config); err != nil {
		return err
	}
	if out.Timeout, err = durationField("timeout", raw.Timeout); err != nil {
		return err
	}
	if out.MaxRetries, err = intField("max_retries", raw.MaxRetries); err != nil {
		return err
	}
	if out.RetryMinBackoff, err = durationField("retry_min_backoff", raw.RetryMinBackoff); err != nil {
		return err
	}
	if out.RetryMaxBackoff, err = durationField("retry_max_backoff", raw.RetryMaxBackoff); err != nil {
		return err
	}
	if out.MaxParallelGets, err = intField("max_parallel_gets", raw.MaxParallelGets); err != nil {
		return err
	}
	if err := out.Validate(); err != nil {
		return err
	}
	*c = out
	return nil
}

// MarshalYAML implements yaml.Marshaler, in the shape UnmarshalYAML reads;
// zero fields are left out.
func (c Config) MarshalYAML() (any, error) {
	type out struct {
		Type            string         `yaml:"type,omitempty"`
		Config          map[string]any `yaml:"config,omitempty"`
		Timeout         string         `yaml:"timeout,omitempty"`
		MaxRetries      int            `yaml:"max_retries,omitempty"`
		RetryMinBackoff string         `yaml:"retry_min_backoff,omitempty"`
		RetryMaxBackoff string         `yaml:"retry_max_backoff,omitempty"`
		MaxParallelGets int            `yaml:"max_parallel_gets,omitempty"`
	}
	dur := func(d time.Duration) string {
		if d == 0 {
			return ""
		}
		return d.String()
	}
	return out{
		Type:            string(c.Type),
		Config:          c.Config,
		Timeout:         dur(c.Timeout),
		MaxRetries:      c.MaxRetries,
		RetryMinBackoff: dur(c.RetryMinBackoff),
		RetryMaxBackoff: dur(c.RetryMaxBackoff),
		MaxParallelGets: c.MaxParallelGets,
	}, nil
}

func providerConfig(v any) (map[string]any, error) {
	switch m := v.(type) {
	case nil:
		return nil, nil
	case map[any]any:
		out := make(map[string]any, len(m))
		var bad []string // keys that are not strings, named in order (map order is random)
		for k, val := range m {
			ks, ok := k.(string)
			if !ok {
				bad = append(bad, fmt.Sprint(k))
				continue
			}
			out[ks] = val
		}
		if len(bad) > 0 {
			return nil, fmt.Errorf("bucket config: config: key %s is not a string", slices.Min(bad))
		}
		return out, nil
	default:
		return nil, fmt.Errorf("bucket config: config: want a mapping of the provider's options, got %T", v)
	}
}

func durationField(field string, v any) (time.Duration, error) {
	switch s := v.(type) {
	case nil:
		return 0, nil
	case string:
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("bucket config: %s: %q is not a duration such as \"30s\" or \"100ms\"", field, s)
		}
		return d, nil
	default:
		return 0, fmt.Errorf("bucket config: %s: want a duration with a unit such as \"30s\", got %v", field, v)
	}
}

func intField(field string, v any) (int, error) {
	switch n := v.(type) {
	case nil:
		return 0, nil
	case int:
		return n, nil
	case int64:
		if n >= math.MinInt && n <= math.MaxInt {
			return int(n), nil
		}
	case uint64:
		if n <= math.MaxInt {
			return int(n), nil
		}
	}
	return 0, fmt.Errorf("bucket config: %s: want an integer, got %v", field, v)
}

// Validate checks the config, upper-cases Type, and reports the first bad
// field by its YAML name. Zero fields are valid: they mean the defaults.
func (c *Config) Validate() error {
	c.Type = Provider(strings.ToUpper(string(c.Type)))
	if c.Type != "" {
		known := false
		for _, p := range providers {
			known = known || c.Type == p
		}
		if !known {
			names := make([]string, len(providers))
			for i, p := range providers {
				names[i] = string(p)
			}
			return fmt.Errorf("bucket config: type: unknown provider %q (want one of %s)", string(c.Type), strings.Join(names, ", "))
		}
	}
	if err := checkRange("timeout", c.Timeout, time.Millisecond, maxTimeout); err != nil {
		return err
	}
	if c.MaxRetries < 0 || c.MaxRetries > maxMaxRetries {
		return fmt.Errorf("bucket config: max_retries: %d is outside [0, %d]", c.MaxRetries, maxMaxRetries)
	}
	if err := checkRange("retry_min_backoff", c.RetryMinBackoff, time.Microsecond, maxBackoff); err != nil {
		return err
	}
	if err := checkRange("retry_max_backoff", c.RetryMaxBackoff, time.Microsecond, maxBackoff); err != nil {
		return err
	}
	if d := c.withDefaults(); d.RetryMinBackoff > d.RetryMaxBackoff {
		return fmt.Errorf("bucket config: retry_min_backoff (%s) is greater than retry_max_backoff (%s)", d.RetryMinBackoff, d.RetryMaxBackoff)
	}
	if c.MaxParallelGets < 0 || c.MaxParallelGets > maxMaxParallelGets {
		return fmt.Errorf("bucket config: max_parallel_gets: %d is outside [0, %d]", c.MaxParallelGets, maxMaxParallelGets)
	}
	return nil
}

// checkRange accepts zero (the default) or a duration in [lo, hi].
func checkRange(field string, d, lo, hi time.Duration) error {
	if d != 0 && (d < lo || d > hi) {
		return fmt.Errorf("bucket config: %s: %s is outside [%s, %s]", field, d, lo, hi)
	}
	return nil
}

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	c.Type = cmp.Or(c.Type, provFilesystem)
	c.Timeout = cmp.Or(c.Timeout, defaultTimeout)
	c.MaxRetries = cmp.Or(c.MaxRetries, defaultMaxRetries)
	c.RetryMinBackoff = cmp.Or(c.RetryMinBackoff, defaultRetryMinBackoff)
	c.RetryMaxBackoff = cmp.Or(c.RetryMaxBackoff, defaultRetryMaxBackoff)
	c.MaxParallelGets = cmp.Or(c.MaxParallelGets, defaultMaxParallelGets)
	return c
}

// Open opens the bucket that cfg describes. dataDir is Aerie's data
// directory, where the filesystem provider keeps its objects by default
// (<dataDir>/bucket, created if missing). logger may be nil; reg may be
// nil, for no metrics registration. The provider config is passed through,
// except that Open fills in the filesystem directory and a single try for
// the S3, GCS and Azure SDKs' own retries when the config leaves them out
// (invariant 6).
func Open(cfg Config, dataDir string, logger *slog.Logger, reg prometheus.Registerer) (*Bucket, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := cfg.withDefaults()
	pc, err := providerConfigFor(c, dataDir)
	if err != nil {
		return nil, err
	}
	if c.Type == provFilesystem {
		if err := os.MkdirAll(pc["directory"].(string), 0o755); err != nil {
			return nil, fmt.Errorf("bucket: create filesystem bucket directory: %w", err)
		}
	}
	raw, err := yaml.Marshal(pc)
	if err != nil {
		return nil, fmt.Errorf("bucket config: config: %w", err)
	}

	kl := kitLogger{logger.With("component", "objstore", "provider", string(c.Type))}
	var bkt objstore.Bucket
	switch c.Type {
	case provFilesystem:
		bkt, err = nonNil(filesystem.NewBucketFromConfig(raw))
		if err == nil {
			bkt = durableFS{Bucket: bkt, root: pc["directory"].(string)}
		}
	case provS3:
		bkt, err = nonNil(s3.NewBucket(kl, raw, "aerie", nil))
	case provGCS:
		bkt, err = nonNil(gcs.NewBucket(context.Background(), kl, raw, "aerie", nil))
	case provAzure:
		bkt, err = nonNil(azure.NewBucket(kl, raw, "aerie", nil))
	case provSwift:
		bkt, err = nonNil(swift.NewContainer(kl, raw, nil))
	}
	if err != nil {
		return nil, fmt.Errorf("bucket config: open %s provider: %w", c.Type, err)
	}
	b, err := Wrap(bkt, cfg, logger, reg)
	if err != nil {
		_ = bkt.Close()
		return nil, err
	}
	return b, nil
}

// providerConfigFor returns the provider config that Open passes on: c's,
// with the filesystem directory made absolute (default <dataDir>/bucket)
// and the SDK's own retries off unless set (invariant 6).
func providerConfigFor(c Config, dataDir string) (map[string]any, error) {
	pc := make(map[string]any, len(c.Config)+1)
	for k, v := range c.Config {
		pc[k] = v
	}
	switch c.Type {
	case provFilesystem:
		dir := ""
		if v, ok := pc["directory"]; ok && v != nil {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("bucket config: config.directory: want a path, got %v", v)
			}
			dir = s
		}
		if dir == "" {
			dir = "bucket"
		}
		if !filepath.IsAbs(dir) {
			if dataDir == "" {
				return nil, fmt.Errorf("bucket config: config.directory: %q is relative and there is no data directory", dir)
			}
			dir = filepath.Join(dataDir, dir)
		}
		pc["directory"] = dir
	case provS3, provGCS, provAzure:
		v, ok := pc["max_retries"]
		if !ok {
			pc["max_retries"] = 1
			break
		}
		// minio-go would retry without waiting (see init).
		if n, isInt := v.(int); c.Type == provS3 && (!isInt || n > 1) {
			return nil, fmt.Errorf("bucket config: config.max_retries: %v; Aerie retries S3 requests itself (max_retries beside config), so the S3 SDK's own retries stay off: leave config.max_retries out or set it to 1", v)
		}
	}
	return pc, nil
}

// nonNil turns a provider constructor's typed result into an interface
// value that is nil exactly when the constructor failed.
func nonNil[B objstore.Bucket](b B, err error) (objstore.Bucket, error) {
	if err != nil {
		return nil, err
	}
	return b, nil
}

// kitLogger hands objstore's go-kit log lines to slog: the "level" and
// "msg" keys become the record's level and message.
type kitLogger struct{ l *slog.Logger }

func (k kitLogger) Log(keyvals ...any) error {
	lvl, msg := slog.LevelInfo, ""
	attrs := make([]any, 0, len(keyvals))
	for i := 0; i < len(keyvals); i += 2 {
		if i+1 == len(keyvals) {
			attrs = append(attrs, "!BADKEY", keyvals[i])
			break
		}
		key, v := fmt.Sprint(keyvals[i]), keyvals[i+1]
		switch key {
		case "level":
			switch fmt.Sprint(v) {
			case "debug":
				lvl = slog.LevelDebug
			case "warn":
				lvl = slog.LevelWarn
			case "error":
				lvl = slog.LevelError
			}
		case "msg":
			msg = fmt.Sprint(v)
		default:
			if err, ok := v.(error); ok {
				v = err.Error()
			}
			attrs = append(attrs, key, v)
		}
	}
	k.l.Log(context.Background(), lvl, msg, attrs...)
	return nil
}
