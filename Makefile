# Aerie — see README.md.
DATA_DIR ?= ./data

.PHONY: run test build fmt vet

# Runs Aerie on the embedded default data directory: loads a demo workload
# into the engine, flushes it to blocks, and answers PromQL over it.
run:
	go run ./cmd/aerie demo --data.dir=$(DATA_DIR)

# Runs every test (what CI runs).
test:
	scripts/test.sh

build:
	go build -o aerie ./cmd/aerie

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	go vet -stdmethods=false ./...
