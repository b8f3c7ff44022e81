package tsdb

// Names of the data directory's entries, all in one place.
const (
	walDirname         = "wal"
	backfillDirname    = "wal-backfill" // one WAL directory per backfill generation
	blocksDirname      = "blocks"
	quarantineDirname  = "quarantine"
	tagDictFilename    = "tagdict"
	tombstonesFilename = "tombstones"
)
