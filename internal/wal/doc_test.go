package wal

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFormatDoc checks the constant table of docs/format/wal.md against the
// code, both ways.
func TestFormatDoc(t *testing.T) {
	want := map[string]string{
		"SegmentMagic":       fmt.Sprintf("0x%X", SegmentMagic),
		"SegmentVersion":     fmt.Sprint(SegmentVersion),
		"SegmentHeaderSize":  fmt.Sprint(SegmentHeaderSize),
		"RecordHeaderSize":   fmt.Sprint(RecordHeaderSize),
		"MaxRecordSize":      fmt.Sprint(MaxRecordSize),
		"CheckpointPrefix":   CheckpointPrefix,
		"RecordInvalid":      fmt.Sprint(uint8(RecordInvalid)),
		"RecordGroups":       fmt.Sprint(uint8(RecordGroups)),
		"RecordSeries":       fmt.Sprint(uint8(RecordSeries)),
		"RecordRows":         fmt.Sprint(uint8(RecordRows)),
		"RecordTombstones":   fmt.Sprint(uint8(RecordTombstones)),
		"SyncBatch":          fmt.Sprint(uint8(SyncBatch)),
		"SyncInterval":       fmt.Sprint(uint8(SyncInterval)),
		"DefaultSegmentSize": fmt.Sprint(DefaultSegmentSize),
	}
	b, err := os.ReadFile("../../docs/format/wal.md")
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(b), "| constant | value |")
	require.True(t, ok, "constant table missing")
	got := map[string]string{}
	for _, line := range strings.Split(table, "\n")[2:] {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) != 2 {
			break
		}
		name := strings.Trim(strings.TrimSpace(cells[0]), "`")
		got[name] = strings.TrimSpace(cells[1])
	}
	require.Equal(t, want, got)
}
