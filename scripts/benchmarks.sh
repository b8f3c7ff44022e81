#!/usr/bin/env bash
# Regenerates docs/BENCHMARKS.md: runs `aerie bench WORKLOAD` at medium
# scale for each workload of `aerie bench list` (JSON into bench/results/),
# then `aerie bench report`. On 2 cores: node, random and tsbs (in process
# against prometheus/tsdb) ~6 min, history (backfill and compaction) ~5,
# http (aerie serve against VictoriaMetrics) ~8, bucket (the object-storage
# tier against a Thanos-style layout) ~5, sensors (Peregreen's operations
# against VictoriaMetrics) ~20, rollup (a year with and without rollups) ~9,
# graphite (against carbon-cache and graphite-web) ~15, cache (TSCache's
# evaluation over InfluxDB and memcached) ~5-8, dashboard (a Grafana
# dashboard against Aerie's results cache and VictoriaMetrics) ~5, codec
# (the block codec against XOR chunks on the real capture) <1.
# SCALE=small shortens every run; WORKLOADS="node http" runs only those;
# a workload's upper-case name set to 0 skips it (HTTP=0, BUCKET=0,
# SENSORS=0, ROLLUP=0, GRAPHITE=0, CACHE=0, DASHBOARD=0, as before). The
# report of a workload not run this time, if bench/results/ has one of
# this scale, goes into docs/BENCHMARKS.md as it is (its section names
# its own commit), so a partial run keeps every section;
# LARGE=1 also runs node at Heracles' 150 K-series scale and history at its
# large scale (~30 more minutes). Large reports already in bench/results/
# are included either way.
set -euo pipefail
cd "$(dirname "$0")/.."
SCALE=${SCALE:-medium}
mkdir -p bench/results
go build -buildvcs=true -o bench/results/aerie ./cmd/aerie # stamps the commit
ALL=$(bench/results/aerie bench list --names)
WORKLOADS=${WORKLOADS:-$ALL}
for w in $WORKLOADS; do
  case " $(echo $ALL) " in
  *" $w "*) ;;
  *) echo "benchmarks.sh: no workload $w (aerie bench list: $(echo $ALL))" >&2; exit 2 ;;
  esac
done
files=()
run() { # workload scale
  echo "=== $1 ($2)" >&2
  bench/results/aerie bench "$1" --scale="$2" --json="bench/results/$1-$2.json"
  files+=("bench/results/$1-$2.json")
}
for w in $ALL; do
  skip=$(printf '%s' "$w" | tr '[:lower:]' '[:upper:]')
  case " $(echo $WORKLOADS) " in
  *" $w "*) if [ "${!skip:-1}" != 0 ]; then run "$w" "$SCALE"; continue; fi ;;
  esac
  if [ -f "bench/results/$w-$SCALE.json" ]; then
    files+=("bench/results/$w-$SCALE.json")
  fi
done
for w in node history; do
  if [ "${LARGE:-0}" = 1 ] && [ "$SCALE" = medium ]; then
    run $w large
  elif [ "$SCALE" = medium ] && [ -f bench/results/$w-large.json ]; then
    files+=(bench/results/$w-large.json)
  fi
done
bench/results/aerie bench report --notes bench/NOTES.md --command "make benchmarks" -o docs/BENCHMARKS.md "${files[@]}"
rm -f bench/results/aerie
echo "wrote docs/BENCHMARKS.md" >&2
