#!/usr/bin/env bash
# Runs Aerie's end-to-end tests (internal/e2e): aerie serve next to Debian's
# Prometheus and node_exporter (scripts/install-deps.sh installs them). The
# tests skip, with a message, when those or `aerie serve` are missing. Extra
# arguments go to go test (e.g. -run TestPromQLTable, -short).
set -euo pipefail
cd "$(dirname "$0")/.."
exec go test -count=1 -v -timeout 25m "$@" ./internal/e2e/
