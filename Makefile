# Aerie — see README.md.
DATA_DIR ?= ./data

.PHONY: run demo test build fmt vet benchmarks ui ui-screenshots

# Runs the Aerie server on the embedded default data directory, listening
# on 127.0.0.1:9201 (see docs/quickstart.md).
run:
	go run ./cmd/aerie serve --data.dir=$(DATA_DIR) --http.addr=127.0.0.1:9201

# Loads a demo workload into the engine, flushes it to blocks, and answers
# PromQL over it, without a server.
demo:
	go run ./cmd/aerie demo --data.dir=$(DATA_DIR)

# Runs every test (what CI runs).
test:
	scripts/test.sh

# Runs every workload of aerie bench list at medium scale, side by side with
# its peers (prometheus/tsdb in process, VictoriaMetrics, carbon-cache and
# graphite-web, memcached and InfluxDB), and regenerates docs/BENCHMARKS.md
# (scripts/benchmarks.sh gives each workload's time; LARGE=1 adds the
# 150 K-series node run).
benchmarks:
	scripts/benchmarks.sh

build:
	go build -o aerie ./cmd/aerie

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	go vet -stdmethods=false ./...

# Rebuilds the web UI's bundle (internal/ui/dist, committed) from web/ with
# npm and esbuild; scripts/ui-check.sh checks the committed one is current.
ui:
	cd web && npm ci --no-audit --no-fund && node build.mjs

# Runs the UI's browser test in headless Chromium against a server holding
# known data and writes a screenshot of each page to docs/ui/.
ui-screenshots:
	go test -count=1 -run TestUIBrowser ./internal/ui/browsertest/ -args -ui.screenshots=$(CURDIR)/docs/ui
