#!/usr/bin/env bash
# Installs what the tests need, idempotently. Today that is only the Go
# module cache (prometheus/tsdb, the differential peer, is a Go library);
# later issues add Debian packages here.
set -euo pipefail
cd "$(dirname "$0")/.."
go mod download
