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

// Entries other packages keep in the data directory, named here so every
// name is in one place: "bucket" and "bucket-meta" (internal/bucket, the
// filesystem bucket and the metadata cache), "sensors" (internal/sensor's
// registry of sensor types) and "sensor-spool" (its upload spools, files
// unlinked as soon as they are created).
