#!/usr/bin/env bash
# Installs what the tests need, idempotently: the Go module cache
# (prometheus/tsdb, the differential peer, is a Go library) and, for the
# end-to-end tests (internal/e2e, scripts/e2e.sh), Debian's Prometheus and
# node_exporter. The e2e tests skip, with a message, when those are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
go mod download

# versitygw, the S3 server that internal/bucket/s3test starts for the bucket
# tests (they skip without it, or fail under CI or AERIE_REQUIRE_S3). A
# go-installed versitygw reports "Version: git", so the version is read from
# the module path that `go version -m` records in the binary.
versitygw_version=v1.8.0
versitygw="$(go env GOPATH | cut -d: -f1)/bin/versitygw"
if ! [ -x "$versitygw" ] ||
   ! go version -m "$versitygw" 2>/dev/null | grep -Eq "^[[:space:]]+mod[[:space:]]+github.com/versity/versitygw[[:space:]]+${versitygw_version}([[:space:]]|\$)"; then
  echo "installing versitygw ${versitygw_version} (for the bucket tests; ~4 min to build)"
  GOBIN="$(dirname "$versitygw")" go install "github.com/versity/versitygw/cmd/versitygw@${versitygw_version}"
fi

# Debian 12 ships prometheus 2.42 and prometheus-node-exporter 1.5. apt does
# not start their services here (no systemd); the tests start their own.
need=()
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
command -v prometheus-node-exporter >/dev/null 2>&1 || need+=(prometheus-node-exporter)
# PostgreSQL for the archive tests (internal/pgarchive/pgtest runs initdb and
# postgres from /usr/lib/postgresql/*/bin; they skip without it, or fail
# under CI or AERIE_REQUIRE_PG).
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || need+=(postgresql)
# Debian 12's graphite-carbon 1.1.7 and graphite-web 1.1.8: the peer of the
# Graphite differential test (internal/graphite/graphitetest starts them).
command -v carbon-cache >/dev/null 2>&1 || need+=(graphite-carbon)
command -v graphite-manage >/dev/null 2>&1 || need+=(graphite-web)
# Debian 12's influxdb 1.6 and memcached 1.6: the backend and the chunk
# cache of `aerie bench cache` (bench/cachebench starts its own; it never
# uses the packages' services).
command -v influxd >/dev/null 2>&1 || need+=(influxdb)
command -v memcached >/dev/null 2>&1 || need+=(memcached)
# Debian 12's chromium: the browser of the web UI's tests (internal/ui
# TestUIBrowser drives it headless through chromedp; it fails without it
# unless -short).
[ -x /usr/bin/chromium ] || need+=(chromium)
# Node and npm rebuild the UI's bundle in scripts/ui-check.sh (Debian 12's
# nodejs 18 is enough for esbuild and the lockfile; a newer one is kept).
command -v npm >/dev/null 2>&1 || need+=(nodejs npm)
if [ ${#need[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "warning: no apt-get: not installing ${need[*]}; the end-to-end tests will skip" >&2
  else
    sudo=()
    if [ "$(id -u)" -ne 0 ]; then
      if command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
        echo "warning: not root and no sudo: not installing ${need[*]}; the end-to-end tests will skip" >&2
        exit 0
      fi
    fi
    echo "installing ${need[*]} (Debian packages, for the end-to-end tests)"
    export DEBIAN_FRONTEND=noninteractive
    # Update the lists only when the install fails on stale or missing ones.
    if ! "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/tmp/aerie-apt.log 2>&1; then
      "${sudo[@]}" apt-get update -qq >>/tmp/aerie-apt.log 2>&1 || true
      if ! "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >>/tmp/aerie-apt.log 2>&1; then
        tail -20 /tmp/aerie-apt.log >&2
        echo "warning: could not install ${need[*]}; the end-to-end tests will skip" >&2
      fi
    fi
  fi
fi
