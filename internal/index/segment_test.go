package index

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestTagDictSegments: segments of a synced dictionary rebuild it in
// order; a segment out of order, damaged or of unsynced pairs is refused
// with an error naming it.
func TestTagDictSegments(t *testing.T) {
	d, err := OpenTagDict(filepath.Join(t.TempDir(), "tagdict"))
	require.NoError(t, err)
	defer d.Close()
	var want [][2]string
	for i := range 300 {
		p := [2]string{"name", string(rune('a'+i%26)) + string(rune('A'+i/26))}
		d.Add(p[0], p[1])
		want = append(want, p)
	}
	_, err = d.AppendSegment(nil, 0, 10)
	require.Error(t, err, "unsynced")
	require.NoError(t, d.Sync())
	require.Equal(t, 300, d.Synced())
	seg1, err := d.AppendSegment(nil, 0, 120)
	require.NoError(t, err)
	seg2, err := d.AppendSegment(nil, 120, 300)
	require.NoError(t, err)
	for _, bad := range [][2]int{{0, 0}, {-1, 3}, {5, 301}} {
		_, err := d.AppendSegment(nil, bad[0], bad[1])
		require.Error(t, err, "%v", bad)
	}

	m := NewMemTagDict()
	err = m.ApplySegment("tagdict/2", seg2)
	var ce *CorruptionError
	require.True(t, errors.As(err, &ce), "out of order: %v", err)
	require.Equal(t, "tagdict/2", ce.File)
	require.NoError(t, m.ApplySegment("tagdict/1", seg1))
	require.NoError(t, m.ApplySegment("tagdict/2", seg2))
	require.Equal(t, 300, m.Len())
	for code, p := range want {
		n, v, ok := m.Pair(uint32(code))
		require.True(t, ok)
		require.Equal(t, p, [2]string{n, v})
	}

	for name, seg := range map[string][]byte{
		"flipped payload": func() []byte { b := append([]byte(nil), seg1...); b[len(b)-6] ^= 1; return b }(),
		"cut":             seg1[:len(seg1)-3],
		"header only":     seg1[:5],
		"bad magic":       append([]byte{0, 0, 0, 0}, seg1[4:]...),
	} {
		err := NewMemTagDict().ApplySegment("seg", seg)
		require.True(t, errors.As(err, &ce), "%s: %v", name, err)
		require.Equal(t, "seg", ce.File, name)
	}
}

// FuzzApplySegment: no input panics; what is applied is what a valid
// prefix of records holds.
func FuzzApplySegment(f *testing.F) {
	d, err := OpenTagDict(filepath.Join(f.TempDir(), "tagdict"))
	if err != nil {
		f.Fatal(err)
	}
	defer d.Close()
	d.Add("a", "b")
	d.Add("job", "node")
	if err := d.Sync(); err != nil {
		f.Fatal(err)
	}
	seg, _ := d.AppendSegment(nil, 0, 2)
	f.Add(seg)
	f.Add(seg[:7])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		m := NewMemTagDict()
		if err := m.ApplySegment("fuzz", b); err == nil && m.Len() == 0 {
			t.Fatal("a segment without pairs was accepted")
		}
	})
}
