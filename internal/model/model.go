package model

// SeriesRef identifies a series in the head and the WAL. Zero is never a
// valid reference.
type SeriesRef uint32

// GroupID identifies a group in the head and the WAL. Zero is never a valid
// group.
type GroupID uint32

// Slot is the position of a series inside its group.
type Slot uint32
