// Package e2e holds Aerie's end-to-end tests: they build the aerie binary,
// run `aerie serve` next to Debian's Prometheus (2.42) and node_exporter
// (1.5) on free 127.0.0.1 ports, and check Aerie against Prometheus over
// HTTP, the way a user would run them side by side.
//
// The package has no non-test code; everything is in *_test.go files:
//
//   - harness_test.go: processes (start, readiness, SIGTERM then SIGKILL,
//     logs under a temp dir, printed on failure), free ports, the aerie
//     build (once per test binary), skips when a binary is missing.
//   - api_test.go: a small client of the Prometheus HTTP API and the
//     normalisation used to compare two servers' answers.
//   - stack_test.go: the shared stack of the long tests: node_exporter,
//     Aerie scraping it (job node-aerie), and Prometheus scraping it (job
//     node) and itself (job prometheus), remote-writing to Aerie.
//   - the tests, one file per subject.
//
// Run them with scripts/e2e.sh (go test -count=1 -v ./internal/e2e/);
// scripts/install-deps.sh installs the Debian packages. Tests skip, with a
// message, when prometheus or prometheus-node-exporter is not installed or
// when the aerie binary has no `serve` subcommand; -short skips the long
// ones (those that collect a minute of data). AERIE_E2E_BIN names an aerie
// binary to use instead of building ./cmd/aerie.
package e2e
