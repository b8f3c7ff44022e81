# Aerie — see README.md.
DATA_DIR ?= ./data

.PHONY: run demo test build fmt vet benchmarks

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

# Runs aerie bench at medium scale for every workload, side by side with
# prometheus/tsdb, and aerie bench http against VictoriaMetrics, and
# regenerates docs/BENCHMARKS.md (~19 min on 2 cores; LARGE=1 adds the
# 150 K-series node run, ~15 min more).
benchmarks:
	scripts/benchmarks.sh

build:
	go build -o aerie ./cmd/aerie

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	go vet -stdmethods=false ./...
