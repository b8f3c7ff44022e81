package queryparse

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBound: the cache keeps at most parseCacheEntries parses and
// parseCacheBytes of query strings, none longer than parseCacheMaxLen,
// none that failed (invariant 3).
func TestBound(t *testing.T) {
	check := func() {
		t.Helper()
		parses.mu.Lock()
		defer parses.mu.Unlock()
		require.LessOrEqual(t, len(parses.m), parseCacheEntries)
		sum := 0
		for k := range parses.m {
			sum += len(k)
		}
		require.Equal(t, sum, parses.bytes)
		require.LessOrEqual(t, sum, parseCacheBytes)
	}
	for i := range 3 * parseCacheEntries {
		_, err := ParseExpr(fmt.Sprintf("x%d", i))
		require.NoError(t, err)
		check()
	}
	// Long strings: the byte bound holds before the count's.
	pad := strings.Repeat(" ", parseCacheMaxLen-20)
	for i := range 200 {
		_, err := ParseExpr(fmt.Sprintf("x%d%s", i, pad))
		require.NoError(t, err)
		_, err = ParseExpr(fmt.Sprintf("x%d%s", i, pad)) // a hit
		require.NoError(t, err)
		check()
	}
	long := "x + " + strings.Repeat("1 + ", parseCacheMaxLen/4) + "1"
	_, err := ParseExpr(long)
	require.NoError(t, err)
	_, err = ParseExpr("sum(")
	require.Error(t, err)
	parses.mu.Lock()
	defer parses.mu.Unlock()
	require.NotContains(t, parses.m, long)
	require.NotContains(t, parses.m, "sum(")
	require.Contains(t, parses.m, fmt.Sprintf("x%d%s", 199, pad))
}
