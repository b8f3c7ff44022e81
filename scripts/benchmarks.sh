#!/usr/bin/env bash
# Regenerates docs/BENCHMARKS.md: runs `aerie bench` at medium scale for
# each workload (JSON into bench/results/) and then `aerie bench report`.
# The history workload (backfill and compaction) takes ~5 of the ~11
# minutes on 2 cores. SCALE=small or WORKLOADS="node" shorten it; LARGE=1
# also runs node at Heracles' 150 K-series scale and history at its large
# scale (~30 more minutes). Large reports already in bench/results/ are
# included either way.
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${SCALE:-medium}
WORKLOADS=${WORKLOADS:-"node random tsbs history"}
mkdir -p bench/results
go build -buildvcs=true -o bench/results/aerie ./cmd/aerie # stamps the commit
files=()
for w in $WORKLOADS; do
  echo "=== $w ($SCALE)" >&2
  bench/results/aerie bench --workload="$w" --scale="$SCALE" --json="bench/results/$w-$SCALE.json"
  files+=("bench/results/$w-$SCALE.json")
done
if [ "${LARGE:-0}" = 1 ] && [ "$SCALE" = medium ]; then
  for w in node history; do
    echo "=== $w (large)" >&2
    bench/results/aerie bench --workload=$w --scale=large --json=bench/results/$w-large.json
  done
fi
for w in node history; do
  if [ "$SCALE" = medium ] && [ -f bench/results/$w-large.json ]; then
    files+=(bench/results/$w-large.json)
  fi
done
bench/results/aerie bench report --notes bench/NOTES.md --command "make benchmarks" -o docs/BENCHMARKS.md "${files[@]}"
rm -f bench/results/aerie
echo "wrote docs/BENCHMARKS.md" >&2
