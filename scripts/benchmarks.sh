#!/usr/bin/env bash
# Regenerates docs/BENCHMARKS.md: runs `aerie bench` at medium scale for
# each workload (JSON into bench/results/) and then `aerie bench report`.
# SCALE=small or WORKLOADS="node" shorten it; LARGE=1 also runs node at
# Heracles' 150 K-series scale (~15 more minutes). A large report already in
# bench/results/ is included either way. Takes ~6 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${SCALE:-medium}
WORKLOADS=${WORKLOADS:-"node random tsbs"}
mkdir -p bench/results
go build -buildvcs=true -o bench/results/aerie ./cmd/aerie # stamps the commit
files=()
for w in $WORKLOADS; do
  echo "=== $w ($SCALE)" >&2
  bench/results/aerie bench --workload="$w" --scale="$SCALE" --json="bench/results/$w-$SCALE.json"
  files+=("bench/results/$w-$SCALE.json")
done
if [ "${LARGE:-0}" = 1 ] && [ "$SCALE" = medium ]; then
  echo "=== node (large)" >&2
  bench/results/aerie bench --workload=node --scale=large --json=bench/results/node-large.json
fi
if [ "$SCALE" = medium ] && [ -f bench/results/node-large.json ]; then
  files+=(bench/results/node-large.json)
fi
bench/results/aerie bench report --notes bench/NOTES.md --command "make benchmarks" -o docs/BENCHMARKS.md "${files[@]}"
rm -f bench/results/aerie
echo "wrote docs/BENCHMARKS.md" >&2
