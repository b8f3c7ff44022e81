package block

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSizes holds Reader.Sizes to the files: its parts add up to the data
// and index files, the chunks by kind to the value columns, and the
// chunks to the columns' count; testBlock's first column of each group is
// constant, the others decimal.
func TestSizes(t *testing.T) {
	const groups, width, rows = 3, 4, 450
	dir, dict := testBlock(t, groups, width, rows)
	r, err := Open(dir, dict, ReaderOptions{})
	require.NoError(t, err)
	defer r.Close()
	s, err := r.Sizes()
	require.NoError(t, err)

	size := func(name string) int64 {
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		return fi.Size()
	}
	require.Equal(t, size(DataFilename), s.Timestamps+s.Values+s.DataOther)
	require.Equal(t, size(IndexFilename), s.Metrics+s.IndexOther)
	require.Positive(t, s.Timestamps)
	require.Positive(t, s.Metrics)
	require.Positive(t, s.IndexOther)
	require.Positive(t, s.DataOther) // header and CRCs

	var chunkBytes, chunks int64
	for k := range s.Chunks {
		chunks += s.Chunks[k]
		chunkBytes += s.ChunkBytes[k]
	}
	require.Equal(t, s.Values, chunkBytes)
	perCol := int64(numChunks(rows))
	require.Equal(t, groups*width*perCol, chunks)
	require.Equal(t, groups*perCol, s.Chunks[chunkConst], "one constant column a group")
	require.Equal(t, groups*(width-1)*perCol, s.Chunks[chunkDecimal])
}
