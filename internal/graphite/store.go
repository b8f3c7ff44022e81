package graphite

import "github.com/aerie-db/aerie/internal/graphite/archive"

// Store is what the Graphite API reads (archive.Store): the rollup
// package implements it over the engine and its rollup levels.
type Store = archive.Store

// Points is one series on an archive's grid (archive.Points).
type Points = archive.Points
