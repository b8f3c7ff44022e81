// Package rollupbench measures what Graphite-style rollups save (issue 14
// §2): a year of node-like data (bench/workload's node target, every
// Stride-th series, scraped every 10 s, ending now) is written into two
// engines in one run — one keeping everything raw, one with the storage
// schema `10s:1d,1m:30d,1h:1y` (average, xFilesFactor 0.5) — in time
// order, with the rollup manager and the per-series raw retention running
// as they do in `aerie serve`, then both are compacted and their bytes on
// disk compared, next to what whisper files of the same schema take. It
// fails on a level that misses a bucket or holds a wrong one (checked
// against the raw data before they expire), never on timing. `aerie bench
// rollup` runs it; `aerie bench report` renders its JSON.
package rollupbench
