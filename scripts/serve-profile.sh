#!/usr/bin/env bash
# serve-profile.sh: profile the "aerie serve" that an "aerie bench" run
# starts, during one phase. It runs the bench command given after "--",
# waits for PATTERN in its log, then fetches /debug/pprof/KIND?seconds=SECONDS
# from the newest "aerie serve" process into OUT.
#
#   scripts/serve-profile.sh 'aerie  influx' trace 4 /tmp/lp.trace -- \
#     ./aerie bench http --workload=node --scale=medium --phases=ingest --clients=2
#   go tool trace -pprof=sync /tmp/lp.trace > sync.pb && go tool pprof -top sync.pb
#
# PATTERN is a line the bench logs just before the phase: the ingest phase
# of a peer starts its server after the log line of the previous one.
# KIND is profile (CPU), trace, heap, mutex or block.
set -euo pipefail
if [[ $# -lt 6 || $5 != -- ]]; then
	echo "usage: $0 PATTERN KIND SECONDS OUT -- BENCH-COMMAND..." >&2
	exit 2
fi
pattern=$1 kind=$2 seconds=$3 out=$4
shift 5
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$@" >"$log" 2>&1 &
bench=$!
until grep -q -- "$pattern" "$log"; do
	if ! kill -0 "$bench" 2>/dev/null; then
		cat "$log" >&2
		echo "$0: the bench ended before \"$pattern\"" >&2
		exit 1
	fi
	sleep 0.05
done
pid=$(pgrep -n -f 'aerie.* serve ' || true)
if [[ -z $pid ]]; then
	echo "$0: no aerie serve is running" >&2
	exit 1
fi
addr=$(tr '\0' '\n' <"/proc/$pid/cmdline" | sed -n 's/^--http.addr=//p')
for _ in $(seq 100); do
	curl -sf -o /dev/null "http://$addr/metrics" && break
	sleep 0.05
done
echo "profiling aerie serve (pid $pid, $addr): $kind for ${seconds}s" >&2
curl -sf -o "$out" "http://$addr/debug/pprof/$kind?seconds=$seconds"
wait "$bench"
grep -E 'clients:' "$log" >&2 || true
