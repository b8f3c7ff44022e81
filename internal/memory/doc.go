// Package memory is Heracles' two-level epoch-based memory manager (§3.2 of
// the paper, rebuilt from its description): it hands out fixed-size blocks
// of big pages to time partitions of the head, keeps flushed partitions
// readable until memory is needed, and reclaims blocks only when no query
// can still be reading them.
//
// # Layout
//
// Pages (Options.PageSize, 1 MiB by default) are plain []byte from the Go
// heap, one make per page, never returned. Each is split into blocks
// (Options.BlockSize, 256 B); a BlockID is the global block index,
// page*blocksPerPage + i. The version array holds one byte per block: the
// top two bits are the block's Area (live 0, hot 1, cooling 2, recycled 3),
// the low six its partition's version tag.
//
// # First level: partitions and versions
//
// The first Alloc for a time partition opens it under the next Version
// (1, 2, 3, …, in opening order). Its blocks are live. SoftRelease (the
// partition was flushed to disk) makes them hot: they keep serving queries.
// HardRelease moves them to the global cooling area and stamps them with
// the global epoch; from then on Valid is false for them and readers use
// the on-disk block. The reclamation policy (below) may also cool part of a
// hot partition.
//
// A Ref is a BlockID with the full 32-bit Version. Valid(ref) and
// Bytes(ref) load the block's byte and accept it if the area is live or hot
// and the tag equals ref's version modulo 64, and if ref's version is fewer
// than VersionWindow (32) openings behind the newest.
//
// Wrap rule. Tags repeat every 64 openings, so two versions compare
// correctly by their tags ((a-b) mod 64 in 1..31 means a is newer) only if
// fewer than 32 openings separate them. Only visible (live or hot) blocks
// need that: a cooling block fails Valid whatever its tag. The manager
// therefore refuses (ErrVersionCollision) to open a partition whose version
// would be 32 or more ahead of a live partition, and cools a hot partition
// that old (it is on disk; its readers go there). Visible partitions thus
// have versions fewer than 32 apart and distinct tags. The check of the
// ref's full version against the newest one makes a stale Ref fail even
// when its block was recycled and reused by a partition 64 openings later
// whose tag is the same.
//
// Reserve opens a partition without taking a block, so a writer can learn
// before it acknowledges data that the partition's allocations will not
// fail but for memory; with Options.Overcommit they do not fail at all
// (pages beyond the limit are taken and counted).
//
// # Second level: epoch-based reclamation
//
// A global epoch (starting at 1) is advanced by Advance, periodically when
// Start runs the background reclaimer. A reader calls Enter at the start of
// a query: it loads the global epoch and registers it in one of a fixed
// array of slots (Options.ReaderSlots, GOMAXPROCS*4 by default), each an
// atomic.Uint64 on its own cache line, claimed with a compare-and-swap. Exit
// clears it. When all slots are taken, a reader joins an occupied slot
// (a count in the slot's low 16 bits) and inherits its older epoch, which
// is conservative: it delays reclamation, never allows an early one. No
// per-block atomic counter is touched. A slot keeps 48 bits of epoch: at
// one Advance a millisecond that lasts 8,900 years.
//
// Reclaim moves a cooling batch, stamped with epoch e, to the recycled area
// (the free list, which Alloc takes first) when e is smaller than every
// registered reader's epoch and than the global epoch. A reader that entered
// before HardRelease may still read a block after it turned cooling; the
// epochs, not the version byte, keep that memory from being recycled under
// it.
//
// # Protocol
//
// Reader: g := m.Enter(), then look refs up in the head's index; for each
// ref, b, ok := m.Bytes(ref) (or Valid(ref) first): if !ok read the on-disk
// block, else read b; finally g.Exit(), and never touch b after it. A ref
// found under one guard may be checked again under a later one. Enter must
// come before the Valid or Bytes check, not merely before the read.
//
// Writer: id, v, err := m.Alloc(partition); fill the block through
// Bytes(MakeRef(id, v)); publish the Ref in the index. A writer that could
// still be filling a block when its partition is hard-released must hold a
// guard as well, or the block could be recycled under it.
//
// Flusher: after the partition is on disk, SoftRelease; to drop it, remove
// it from the index, then HardRelease.
//
// # Invariants
//
//  1. A block cooled at epoch e is recycled only when every reader
//     registered at an epoch ≤ e has exited and the global epoch is past e.
//     Hence a reader that saw the block valid keeps its memory intact until
//     it exits. The epoch it registered was read from the global epoch before
//     its slot store (by itself, or by the reader whose slot it joined); the
//     store precedes its load of the version byte; that load read the byte
//     before HardRelease stored "cooling", and the store precedes
//     HardRelease's load of e. So it registered at ≤ e, and Reclaim (later,
//     under the same lock) sees its slot. Conversely a reader registered at
//     an epoch > e loads the byte after it turned cooling and never reads the
//     block.
//  2. After HardRelease(p) returns, Valid(ref) is false for every ref of p,
//     for every caller; after SoftRelease(p) it stays true. Pressure
//     reclamation makes it false for the blocks it cools.
//  3. Visible partitions (live or hot) have versions fewer than
//     VersionWindow apart and therefore distinct 6-bit tags: opening a
//     partition VersionWindow ahead of a live one fails with
//     ErrVersionCollision, and hot ones that far behind are cooled.
//  4. Valid(ref) is true only for the partition opening that allocated
//     ref's block: a block is re-tagged only after it is recycled, and a
//     reused block either has a different tag or belongs to a partition
//     ≥ 64 openings newer, which Valid rejects by the window check (newest
//     is stored before a new partition's first tag, and Valid loads the tag
//     before newest). The zero Ref is never valid.
//  5. Live blocks are never taken by the reclamation policy; a partition's
//     blocks stay live until SoftRelease or HardRelease.
//  6. Every block handed out is in exactly one place: a partition's block
//     list, a cooling batch, or the free list, with the matching version
//     byte (Check verifies it; invariants builds check after every
//     HardRelease and Reclaim).
//  7. In an invariants build, recycled blocks and new pages are filled with
//     Poison, and Alloc panics if a recycled block was written after it was
//     freed. CheckNotPoisoned lets a reader detect a read of recycled
//     memory.
//
// # Reclamation policy
//
// With a Limit, blocks in use (live + hot + cooling) above
// ReclaimThreshold·Limit (90 % by default) are the pressure. Reclaim
// recycles what the epochs allow and, if the cooling area will not cover
// the pressure, cools that many hot blocks: Heracles' 45/35/20 % over the
// three oldest hot partitions by partition id (ReclaimSplit), shortfalls
// passing to the next partition and then to the oldest with blocks left.
// The granularity is the block, not the partition: a hot partition is on
// disk already, so a cooled block only sends readers of that block to disk,
// and the split keeps the newer hot partitions in memory. Within a
// partition the earliest-allocated blocks (its oldest data) go first. A
// partition whose last hot block was cooled counts as hard-released. Alloc
// at the limit with an empty free list does the same inline, advances the
// epoch and retries once; failing that it returns ErrOutOfMemory.
//
// # Locking
//
// One mutex (Manager.mu) serializes allocation, area transitions,
// reclamation and every store to the version array. Valid, Bytes, Enter,
// Exit, Advance and Epoch take no lock. The version array is stored as
// atomic.Uint32 words of four version bytes per page, so a reader's check is
// one atomic load and the array stays one byte per block; a store is a
// load-modify-store of the word under the mutex. The page directory is an
// atomic pointer republished when a page is added. All atomics are
// sequentially consistent, which the argument of invariant 1 relies on.
package memory
