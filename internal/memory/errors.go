package memory

import "errors"

// ErrOutOfMemory is returned (wrapped) by Alloc when the memory limit is
// reached and nothing can be reclaimed: every block is live, or pinned by a
// reader. The caller keeps the data in ordinary Go memory or applies
// back-pressure; retrying after readers exit (and an Advance) may succeed.
var ErrOutOfMemory = errors.New("memory limit reached and nothing reclaimable")

// ErrVersionCollision is returned (wrapped) by Alloc and Reserve when
// opening a new partition would give it a version VersionWindow or more
// openings ahead of a live partition (one not yet released). Its 6-bit tag
// could then collide with, or compare wrongly against, that partition's.
// Releasing the old partition clears it.
var ErrVersionCollision = errors.New("partition version window full")

// ErrReleased is returned (wrapped) by Alloc for a partition that was
// already soft- or hard-released: its blocks are on disk and it takes no new
// ones. Once all of its blocks are recycled the manager forgets the
// partition, and a later Alloc opens it again under a new version.
var ErrReleased = errors.New("partition already released")

// ErrPoisoned is returned (wrapped) by CheckNotPoisoned.
var ErrPoisoned = errors.New("read of recycled (poisoned) memory")
