#!/usr/bin/env bash
# Runs every test of Aerie: formatting, vet, unit and integration tests
# with the race detector, the full-size differential and crash tests, and a
# short run of every fuzz target. This is what `make test` and CI run.
set -euo pipefail
cd "$(dirname "$0")/.."

# A count, not a duration: go1.26's fuzz coordinator can fail a run with
# "context deadline exceeded" when a duration expires (golang/go#75804).
FUZZTIME=${FUZZTIME:-10000x}
export GOFLAGS=${GOFLAGS:-}

step() { printf '\n=== %s\n' "$*"; }

step "deps"
scripts/install-deps.sh

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

step "go vet"
# stdmethods is off because chunkenc.Iterator's Seek(int64) ValueType is
# Prometheus' interface, not io.Seeker.
go vet -stdmethods=false ./...

step "go test -race (short mode: the big differential runs below without -race)"
go test -race -short -count=1 -timeout 20m ./...

step "invariants build"
go test -tags invariants -short -count=1 ./internal/...

step "memory manager stress: writers, readers, flushes and reclamation under -race, recycled blocks poisoned"
go test -tags invariants -race -count=1 -run TestStress ./internal/memory/ -memory.stress=30s

step "differential test against prometheus/tsdb, kill -9 crash tests (writes; backfill and compaction; history runs), replay memory, a year backfilled in bounded memory (full size)"
go test -count=1 -timeout 20m -run 'TestDifferential|TestCrashKill9|TestCompactionCrashKill9|TestRunCrashKill9|TestReplayMemoryBounded|TestBackfillYearBounded' -v ./internal/tsdb/ 2>&1 | grep -E '^(=== RUN|--- |PASS|FAIL|ok|\s+\S+\.go:[0-9]+)' || { echo "full tests failed"; exit 1; }

step "Aerie's evaluator (internal/queryeval) against Prometheus' engine on the full differential workload (prometheus/tsdb, Aerie's head and blocks) and on 800 generated expressions"
AERIE_SMITH_N=200 go test -count=1 -timeout 15m -run 'TestSameAnswers|TestRandomQueries' -v ./internal/queryeval/ 2>&1 | grep -E '^(--- |PASS|FAIL|ok|\s+\S+\.go:[0-9]+)' || { echo "queryeval differential test failed"; exit 1; }

step "kill -9 while blocks move to the bucket (12 kills): no acknowledged row lost, every visible block verifies"
go test -count=1 -timeout 10m -run 'TestUploadCrashKill9' -v ./internal/bucket/ 2>&1 | grep -E '^(--- |PASS|FAIL|ok|\s+\S+\.go:[0-9]+)' || { echo "upload crash test failed"; exit 1; }

step "end-to-end: the server in-process, then Debian Prometheus and node_exporter against aerie serve"
go test -count=1 ./internal/server/
scripts/e2e.sh 2>&1 | grep -E '^(=== RUN|--- |PASS|FAIL|ok|\s+\S+\.go:[0-9]+)' || { echo "end-to-end tests failed"; exit 1; }

step "web UI: bundle rebuilt from sources equals the committed one; browser tests in Debian's chromium"
scripts/ui-check.sh
go test -count=1 -run 'TestUI|TestBundleSize' -v ./internal/ui/... 2>&1 | grep -E '^(=== RUN|--- |PASS|FAIL|ok|\s+\S+\.go:[0-9]+)' || { echo "web UI tests failed"; exit 1; }

step "fuzz (each target ${FUZZTIME} inputs)"
for pkg in $(go list ./...); do
  for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
    echo "-- $pkg $target"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg" > /tmp/aerie-fuzz.log 2>&1 || { cat /tmp/aerie-fuzz.log; exit 1; }
  done
done

step "bench harness: every workload of aerie bench list at small scale (bench/workloads): node, random, tsbs and history side by side with prometheus/tsdb, codec against XOR chunks, aerie bench http against VictoriaMetrics, aerie bench bucket against a Thanos-style layout, aerie bench --workload=sensors against VictoriaMetrics, aerie bench rollup (14 days with and without rollups), aerie bench graphite (plaintext ingest and 20 Grafana panels against carbon-cache and graphite-web), aerie bench cache (TSCache's evaluation: Aerie's cache, memcached 4 h chunks and no cache over Debian's InfluxDB) and aerie bench dashboard (a Grafana dashboard replayed against Aerie with its results cache off and on and against VictoriaMetrics) (no timing is asserted; http fails on a server that does not start, a lost sample or a wrong answer; bucket on answers that differ; sensors on any answer that differs from the data; rollup on a bucket that differs from the raw data; graphite on a point Aerie did not store as sent; cache on an assembled answer that differs from InfluxDB's; dashboard on an answer through the results cache that differs from Aerie's without it)"
bin=$(mktemp -d)/aerie
go build -o "$bin" ./cmd/aerie
for w in $("$bin" bench list --names); do
  "$bin" bench "$w" --scale=small --quiet > /dev/null || { echo "aerie bench $w --scale=small failed" >&2; exit 1; }
done
rm -rf "$(dirname "$bin")"

step "benchmarks compile and run once"
go test -run '^$' -bench . -benchtime 1x ./internal/... > /dev/null

echo
echo "all tests passed"
