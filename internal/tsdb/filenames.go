package tsdb

// Names of the data directory's entries, all in one place.
const (
	walDirname         = "wal"
	blocksDirname      = "blocks"
	quarantineDirname  = "quarantine"
	tagDictFilename    = "tagdict"
	tombstonesFilename = "tombstones"
)
