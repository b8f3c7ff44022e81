// Package formatdoc checks the specifications in docs/format/ against the
// code, for tests only: each spec ends with a `| constant | value |` table
// that must list exactly the format constants a package exports, with the
// values they have in code (Prometheus' own index.md drifted from its code;
// this keeps ours honest).
package formatdoc
