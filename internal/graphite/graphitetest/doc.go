// Package graphitetest starts the real Graphite — Debian's graphite-carbon
// (carbon-cache writing whisper files) and graphite-web (its Django
// application) — on free 127.0.0.1 ports, for differential tests of Aerie's
// Graphite receivers and render API against it.
//
// Start puts everything under a temporary directory: carbon.conf,
// storage-schemas.conf and storage-aggregation.conf in conf/, whisper files,
// pid and logs in storage/, graphite-web's settings module, sqlite database
// (its tag database) and logs in web/. Nothing under /etc or /var/lib is
// read or written and no service manager is involved: carbon-cache runs with
// --nodaemon, graphite-web with `django-admin runserver --noreload`, both as
// children of the test, stopped by SIGTERM (SIGKILL after a grace period) in
// the test's cleanup, and killed by the kernel if the test binary dies first
// (Pdeathsig on Linux).
//
// Invariants:
//
//  1. A test that calls Start either gets both processes answering (carbon's
//     line receiver and cache-query port accept connections, graphite-web
//     answers /metrics/find with 200) or stops: skipped when the packages
//     are not installed, failed when they are installed and do not start,
//     and failed when they are missing and the environment variable CI or
//     AERIE_REQUIRE_GRAPHITE is set (scripts/install-deps.sh installs them).
//  2. carbon-cache creates every new whisper file at once and writes as fast
//     as it can (MAX_CREATES_PER_MINUTE and MAX_UPDATES_PER_SECOND
//     unlimited), keeps no self-instrumentation series (they would show in
//     find queries), and tags tagged series through graphite-web's
//     /tags/tagMultiSeries (ENABLE_TAGS, GRAPHITE_URL).
//  3. graphite-web reads carbon's whisper directory and queries carbon's
//     cache (CARBONLINK_HOSTS), so points not yet written are seen by
//     /render; TIME_ZONE is UTC.
//  4. After Flush(metrics) returns nil, carbon's cache holds no point of
//     those metrics (asked twice, a writer pass apart, through carbon's
//     cache-query protocol) and every tagged one among them is in
//     graphite-web's tag database: the answers of graphite-web no longer
//     change for them, whatever carbon does next.
//
// Startup takes 2.5 s on an idle machine (carbon-cache 0.5 s, in parallel
// with graphite-web's database migration, 1.1 s, then its server, 1.3 s),
// and 5 to 25 s on the 2-core CI machine under load (Python imports).
package graphitetest
