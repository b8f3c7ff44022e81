package resultcache

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/prometheus/common/model"
)

// parseTime reads a time as Prometheus' API does (Unix seconds with a
// fraction, or RFC 3339), in ms.
func parseTime(s string) (int64, error) {
	if t, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(t) || math.IsInf(t, 0) || math.Abs(t) > 1e12 {
			return 0, fmt.Errorf("time %q out of range", s)
		}
		return int64(math.Round(t * 1000)), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UnixMilli(), nil
	}
	return 0, fmt.Errorf("cannot parse %q as a time", s)
}

// parseStep reads a duration as Prometheus' API does (seconds with a
// fraction, or a Prometheus duration), in ms.
func parseStep(s string) (int64, error) {
	if d, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(d) || math.IsInf(d, 0) || d <= 0 || d > 1e10 {
			return 0, fmt.Errorf("duration %q out of range", s)
		}
		return int64(math.Round(d * 1000)), nil
	}
	if d, err := model.ParseDuration(s); err == nil {
		return time.Duration(d).Milliseconds(), nil
	}
	return 0, fmt.Errorf("cannot parse %q as a duration", s)
}

// formatTime writes ms as seconds with a fraction, exactly.
func formatTime(ms int64) string { return string(appendTime(nil, ms)) }
