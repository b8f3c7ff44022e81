#!/usr/bin/env bash
# Regenerates docs/BENCHMARKS.md: runs `aerie bench` at medium scale for
# each workload (JSON into bench/results/), then `aerie bench http` (aerie
# serve against VictoriaMetrics, ../shared/peers/victoria-metrics, over
# HTTP) and then `aerie bench report`. The history workload (backfill and
# compaction) takes ~5 of the ~11 minutes of the engine runs on 2 cores,
# the http run ~8 more. SCALE=small or WORKLOADS="node" shorten it; HTTP=0
# skips the http run; BUCKET=0 skips `aerie bench bucket` (the object-storage
# tier against a Thanos-style layout, ~5 min); SENSORS=0 skips `aerie bench
# --workload=sensors` (Peregreen's upload, search and extraction against
# VictoriaMetrics, ~20 min); ROLLUP=0 skips `aerie bench rollup` (a year of
# node-like data with and without Graphite-style rollups, ~9 min);
# GRAPHITE=0 skips `aerie bench graphite` (plaintext ingest of 500 K series,
# then 20 K into aerie and Debian's carbon-cache, and 20 Grafana panels
# against graphite-web, ~15 min); CACHE=0 skips `aerie bench cache` (TSCache's
# evaluation: Aerie's cache against memcached 4 h chunks and InfluxDB alone,
# ~5-8 min); DASHBOARD=0 skips `aerie bench dashboard` (a Grafana dashboard
# replayed against Aerie with its results cache off and on and against
# VictoriaMetrics, ~5 min); LARGE=1 also runs node at Heracles' 150 K-series
# scale and history at its large scale (~30 more minutes). Large reports
# already in bench/results/ are included either way.
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
if [ "${HTTP:-1}" = 1 ]; then
  echo "=== http ($SCALE)" >&2
  bench/results/aerie bench http --scale="$SCALE" --json="bench/results/http-$SCALE.json"
  files+=("bench/results/http-$SCALE.json")
fi
if [ "${BUCKET:-1}" = 1 ]; then
  echo "=== bucket ($SCALE)" >&2
  bench/results/aerie bench bucket --scale="$SCALE" --json="bench/results/bucket-$SCALE.json"
  files+=("bench/results/bucket-$SCALE.json")
fi
if [ "${SENSORS:-1}" = 1 ]; then
  echo "=== sensors ($SCALE)" >&2
  bench/results/aerie bench --workload=sensors --scale="$SCALE" --out="bench/results/sensors-$SCALE.json"
  files+=("bench/results/sensors-$SCALE.json")
fi
if [ "${ROLLUP:-1}" = 1 ]; then
  echo "=== rollup ($SCALE)" >&2
  bench/results/aerie bench rollup --scale="$SCALE" --json="bench/results/rollup-$SCALE.json"
  files+=("bench/results/rollup-$SCALE.json")
fi
if [ "${GRAPHITE:-1}" = 1 ]; then
  echo "=== graphite ($SCALE)" >&2
  bench/results/aerie bench graphite --scale="$SCALE" --json="bench/results/graphite-$SCALE.json"
  files+=("bench/results/graphite-$SCALE.json")
fi
if [ "${CACHE:-1}" = 1 ]; then
  echo "=== cache ($SCALE)" >&2
  bench/results/aerie bench cache --scale="$SCALE" --json="bench/results/cache-$SCALE.json"
  files+=("bench/results/cache-$SCALE.json")
fi
if [ "${DASHBOARD:-1}" = 1 ]; then
  echo "=== dashboard ($SCALE)" >&2
  bench/results/aerie bench dashboard --scale="$SCALE" --json="bench/results/dashboard-$SCALE.json"
  files+=("bench/results/dashboard-$SCALE.json")
fi
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
