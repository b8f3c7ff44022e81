#!/usr/bin/env bash
# Copies the inputs the fuzzer found interesting (kept in the Go build
# cache) into each package's testdata/fuzz/<Target>/ so they are committed
# as seed corpora. Run after `go test -fuzz` sessions.
set -euo pipefail
cd "$(dirname "$0")/.."
cache=$(go env GOCACHE)/fuzz
for pkg in $(go list ./...); do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  [ -d "$cache/$pkg" ] || continue
  for target in "$cache/$pkg"/*; do
    name=$(basename "$target")
    mkdir -p "$dir/testdata/fuzz/$name"
    # keep the corpus small: at most 30 inputs per target
    ls "$target" | head -30 | while read -r f; do cp -n "$target/$f" "$dir/testdata/fuzz/$name/"; done
  done
done
