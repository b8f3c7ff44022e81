#!/usr/bin/env bash
# Rebuilds the web UI's bundle (internal/ui/dist) from web/'s sources and
# lockfile and fails if it differs from the committed one: the bundle is
# committed so `go build` needs no npm, and this keeps it honest. Also type-
# checks the sources. Needs Node 20+ and npm; reaches the npm registry
# unless ~/.npm holds the packages.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in node npm; do
  command -v "$tool" >/dev/null 2>&1 || { echo "ui-check: no $tool (scripts/install-deps.sh installs Debian's nodejs and npm)" >&2; exit 1; }
done
cd web
npm ci --no-audit --no-fund --loglevel=error
npx --no-install tsc --noEmit -p .
node build.mjs
cd ..
if ! git diff --exit-code --stat -- internal/ui/dist ||
   [ -n "$(git ls-files --others --exclude-standard -- internal/ui/dist)" ]; then
  git status --short -- internal/ui/dist >&2
  echo "internal/ui/dist differs from a fresh build of web/: run 'cd web && npm ci && node build.mjs' and commit the result" >&2
  exit 1
fi
echo "web UI: internal/ui/dist equals a fresh build of web/"
