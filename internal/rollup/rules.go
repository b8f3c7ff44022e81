package rollup

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Retention is one archive of a storage schema: points every Step, kept
// for Duration.
type Retention struct {
	Step, Duration time.Duration
}

func (r Retention) String() string { return fmtDur(r.Step) + ":" + fmtDur(r.Duration) }

// Schema is a storage-schemas.conf section: the archives of the series
// whose path its pattern matches (the first matching schema wins, as in
// carbon). Retentions[0] is the raw archive: the engine's own samples,
// read on its grid and deleted past its duration; every further archive
// is a rollup level. Heartbeat is the longest gap a sample's value holds
// over on the finest grid: a slot without a sample takes the value of the
// last sample before it only if that sample is at most Heartbeat older
// than the slot's end [Retentions[0].Step: a missing point is a gap, as in
// whisper].
type Schema struct {
	Name       string
	Pattern    *regexp.Regexp
	Retentions []Retention
	Heartbeat  time.Duration
}

// Aggregation is a storage-aggregation.conf section: how the series
// whose path its pattern matches are consolidated into coarser archives.
// XFilesFactor is graphite-web's: the share of a bucket's finer slots that
// must be known for the bucket to be known.
type Aggregation struct {
	Name         string
	Pattern      *regexp.Regexp
	XFilesFactor float64
	Method       Method
}

// Method is a consolidation function.
type Method string

// The methods of storage-aggregation.conf. Average is the mean of the
// known slots, which on the finest grid is Tgres's time-weighted mean.
const (
	Average Method = "average"
	Sum     Method = "sum"
	Min     Method = "min"
	Max     Method = "max"
	Last    Method = "last"
	Count   Method = "count"
)

// ParseMethod accepts carbon's names (and avg, the RRD-style alias).
func ParseMethod(s string) (Method, error) {
	switch m := Method(strings.ToLower(strings.TrimSpace(s))); m {
	case Average, Sum, Min, Max, Last, Count:
		return m, nil
	case "avg":
		return Average, nil
	}
	return "", fmt.Errorf("aggregation method %q: must be average, sum, min, max, last or count", s)
}

// Defaults for series no rule matches: carbon's defaults (one archive of
// one minute; average with xFilesFactor 0.5). The default archive keeps
// raw data as long as the engine's retention does.
var (
	DefaultSchema      = Schema{Name: "default", Retentions: []Retention{{Step: time.Minute}}, Heartbeat: time.Minute}
	DefaultAggregation = Aggregation{Name: "default", XFilesFactor: 0.5, Method: Average}
)

// Rules are the storage schemas and aggregations, each matched in order,
// first match wins, against the series' path (its __name__).
type Rules struct {
	Schemas      []Schema
	Aggregations []Aggregation

	mu    sync.RWMutex // guards cache
	cache map[string]match
}

type match struct {
	s *Schema
	a *Aggregation
}

// maxCache bounds the per-name match cache; past it, names are matched
// without caching.
const maxCache = 1 << 20

// Match returns the schema and the aggregation of a path.
func (r *Rules) Match(name string) (*Schema, *Aggregation) {
	r.mu.RLock()
	m, ok := r.cache[name]
	r.mu.RUnlock()
	if ok {
		return m.s, m.a
	}
	m = match{s: &DefaultSchema, a: &DefaultAggregation}
	for i := range r.Schemas {
		if r.Schemas[i].Pattern.MatchString(name) {
			m.s = &r.Schemas[i]
			break
		}
	}
	for i := range r.Aggregations {
		if r.Aggregations[i].Pattern.MatchString(name) {
			m.a = &r.Aggregations[i]
			break
		}
	}
	r.mu.Lock()
	if r.cache == nil {
		r.cache = map[string]match{}
	}
	if len(r.cache) < maxCache {
		r.cache[name] = m
	}
	r.mu.Unlock()
	return m.s, m.a
}

// Levels returns the distinct steps of every schema's rollup archives
// (Retentions[1:]), each with the longest duration asked for it, finest
// first.
func (r *Rules) Levels() []Retention {
	by := map[time.Duration]time.Duration{}
	for _, s := range r.Schemas {
		for _, rt := range s.Retentions[1:] {
			by[rt.Step] = max(by[rt.Step], rt.Duration)
		}
	}
	out := make([]Retention, 0, len(by))
	for st, d := range by {
		out = append(out, Retention{Step: st, Duration: d})
	}
	sortRetentions(out)
	return out
}

func sortRetentions(rs []Retention) {
	for i := 1; i < len(rs); i++ {
		for j := i; j > 0 && rs[j].Step < rs[j-1].Step; j-- {
			rs[j], rs[j-1] = rs[j-1], rs[j]
		}
	}
}

// NewSchema validates a schema: the pattern compiles; retentions are
// carbon's (`10s:6h,1m:7d,1h:1y`, or seconds:points such as `60:1440`),
// each step a multiple of the previous one and each duration longer.
func NewSchema(name, pattern, retentions string, heartbeat time.Duration) (Schema, error) {
	s := Schema{Name: name}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return s, fmt.Errorf("schema %s: pattern %q: %w", name, pattern, err)
	}
	s.Pattern = re
	if s.Retentions, err = ParseRetentions(retentions); err != nil {
		return s, fmt.Errorf("schema %s: %w", name, err)
	}
	s.Heartbeat = heartbeat
	if heartbeat == 0 {
		s.Heartbeat = s.Retentions[0].Step
	}
	if s.Heartbeat < 0 {
		return s, fmt.Errorf("schema %s: heartbeat %v must be positive", name, heartbeat)
	}
	return s, nil
}

// NewAggregation validates an aggregation rule.
func NewAggregation(name, pattern string, xff float64, method string) (Aggregation, error) {
	a := Aggregation{Name: name, XFilesFactor: xff}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return a, fmt.Errorf("aggregation %s: pattern %q: %w", name, pattern, err)
	}
	a.Pattern = re
	if math.IsNaN(xff) || xff < 0 || xff > 1 {
		return a, fmt.Errorf("aggregation %s: xFilesFactor %v must be in [0, 1]", name, xff)
	}
	if a.Method, err = ParseMethod(method); err != nil {
		return a, fmt.Errorf("aggregation %s: %w", name, err)
	}
	return a, nil
}

// maxArchives bounds the archives of one schema (whisper allows any; a
// dozen is already unusual).
const maxArchives = 16

// ParseRetentions parses carbon's retention list.
func ParseRetentions(s string) ([]Retention, error) {
	parts := strings.Split(s, ",")
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("retentions %q: empty", s)
	}
	if len(parts) > maxArchives {
		return nil, fmt.Errorf("retentions %q: more than %d archives", s, maxArchives)
	}
	var out []Retention
	for i, p := range parts {
		p = strings.TrimSpace(p)
		a, b, ok := strings.Cut(p, ":")
		if !ok {
			return nil, fmt.Errorf("retentions %q: archive %d %q: want precision:retention", s, i+1, p)
		}
		step, err := parseUnit(a, time.Second)
		if err != nil || step < time.Second {
			return nil, fmt.Errorf("retentions %q: archive %d precision %q: want seconds or a duration of at least 1s like 10s, 1m", s, i+1, a)
		}
		var dur time.Duration
		if n, err := strconv.ParseInt(b, 10, 64); err == nil {
			if n <= 0 || n > math.MaxInt64/int64(step) {
				return nil, fmt.Errorf("retentions %q: archive %d: %d points out of range", s, i+1, n)
			}
			dur = time.Duration(n) * step // whisper's seconds:points form
		} else if dur, err = parseUnit(b, 0); err != nil {
			return nil, fmt.Errorf("retentions %q: archive %d retention %q: want points or a duration like 6h, 7d, 1y", s, i+1, b)
		}
		if dur < step {
			return nil, fmt.Errorf("retentions %q: archive %d keeps %v, less than one point of %v", s, i+1, dur, step)
		}
		r := Retention{Step: step, Duration: dur}
		if len(out) > 0 {
			prev := out[len(out)-1]
			if r.Step <= prev.Step || r.Step%prev.Step != 0 {
				return nil, fmt.Errorf("retentions %q: archive %d precision %v must be a multiple of the previous one (%v) and coarser", s, i+1, r.Step, prev.Step)
			}
			if r.Duration <= prev.Duration {
				return nil, fmt.Errorf("retentions %q: archive %d must keep longer than the previous one (%v ≤ %v)", s, i+1, r.Duration, prev.Duration)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

var units = []struct {
	suffix []string
	d      time.Duration
}{
	{[]string{"s", "sec", "secs", "second", "seconds"}, time.Second},
	{[]string{"m", "min", "mins", "minute", "minutes"}, time.Minute},
	{[]string{"h", "hour", "hours"}, time.Hour},
	{[]string{"d", "day", "days"}, 24 * time.Hour},
	{[]string{"w", "week", "weeks"}, 7 * 24 * time.Hour},
	{[]string{"y", "year", "years"}, 365 * 24 * time.Hour},
}

// parseUnit parses carbon's `<n><unit>`; a bare number is in bare units
// (0: not allowed).
func parseUnit(s string, bare time.Duration) (time.Duration, error) {
	s = strings.TrimSpace(s)
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i > 12 {
		return 0, fmt.Errorf("bad number")
	}
	n, _ := strconv.ParseInt(s[:i], 10, 64)
	u := strings.ToLower(s[i:])
	if u == "" {
		if bare == 0 {
			return 0, fmt.Errorf("no unit")
		}
		return time.Duration(n) * bare, nil
	}
	for _, un := range units {
		for _, suf := range un.suffix {
			if u == suf {
				if n > int64(math.MaxInt64/un.d) {
					return 0, fmt.Errorf("too long")
				}
				return time.Duration(n) * un.d, nil
			}
		}
	}
	return 0, fmt.Errorf("unknown unit %q", u)
}

func fmtDur(d time.Duration) string {
	for i := len(units) - 1; i >= 0; i-- {
		if d%units[i].d == 0 {
			return strconv.FormatInt(int64(d/units[i].d), 10) + units[i].suffix[0]
		}
	}
	return d.String()
}

// maxConfBytes bounds a carbon configuration file.
const maxConfBytes = 1 << 20

// ini is one section of a carbon configuration file.
type ini struct {
	name string
	line int
	kv   map[string]string
}

func parseINI(r io.Reader, file string) ([]ini, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxConfBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxConfBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", file, maxConfBytes)
	}
	var out []ini
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, maxConfBytes)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			if !strings.HasSuffix(line, "]") {
				return nil, fmt.Errorf("%s:%d: section header %q has no closing ]", file, n, line)
			}
			out = append(out, ini{name: strings.TrimSpace(line[1 : len(line)-1]), line: n, kv: map[string]string{}})
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s:%d: %q: want key = value", file, n, line)
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%s:%d: %q before any [section]", file, n, line)
		}
		out[len(out)-1].kv[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	return out, sc.Err()
}

// ParseSchemasConf reads carbon's storage-schemas.conf. Heartbeat is not
// carbon's: an optional `heartbeat = 30s` key sets it.
func ParseSchemasConf(r io.Reader, file string) ([]Schema, error) {
	secs, err := parseINI(r, file)
	if err != nil {
		return nil, err
	}
	var out []Schema
	for _, sec := range secs {
		pat, ok := sec.kv["pattern"]
		if !ok {
			if _, tagged := sec.kv["tags"]; tagged {
				return nil, fmt.Errorf("%s:%d: [%s]: tag-matching schemas are not supported; use pattern", file, sec.line, sec.name)
			}
			return nil, fmt.Errorf("%s:%d: [%s]: no pattern", file, sec.line, sec.name)
		}
		var hb time.Duration
		if h, ok := sec.kv["heartbeat"]; ok {
			if hb, err = parseUnit(h, time.Second); err != nil {
				return nil, fmt.Errorf("%s:%d: [%s]: heartbeat %q: %v", file, sec.line, sec.name, h, err)
			}
		}
		s, err := NewSchema(sec.name, pat, sec.kv["retentions"], hb)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, sec.line, err)
		}
		out = append(out, s)
	}
	return out, nil
}

// ParseAggregationConf reads carbon's storage-aggregation.conf. Missing
// keys take carbon's defaults (xFilesFactor 0.5, average).
func ParseAggregationConf(r io.Reader, file string) ([]Aggregation, error) {
	secs, err := parseINI(r, file)
	if err != nil {
		return nil, err
	}
	var out []Aggregation
	for _, sec := range secs {
		pat, ok := sec.kv["pattern"]
		if !ok {
			return nil, fmt.Errorf("%s:%d: [%s]: no pattern", file, sec.line, sec.name)
		}
		xff := 0.5
		if v, ok := sec.kv["xfilesfactor"]; ok {
			if xff, err = strconv.ParseFloat(v, 64); err != nil {
				return nil, fmt.Errorf("%s:%d: [%s]: xFilesFactor %q: not a number", file, sec.line, sec.name, v)
			}
		}
		m := "average"
		if v, ok := sec.kv["aggregationmethod"]; ok {
			m = v
		}
		a, err := NewAggregation(sec.name, pat, xff, m)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, sec.line, err)
		}
		out = append(out, a)
	}
	return out, nil
}
