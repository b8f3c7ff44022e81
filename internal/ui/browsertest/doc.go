// Package browsertest holds the web UI's browser test (TestUIBrowser): a
// real server with known data, driven through Debian's headless Chromium by
// chromedp. It is a package of its own so that internal/ui's test binary,
// which the fuzz step builds with instrumentation, does not link the whole
// server and chromedp.
//
// Screenshots of each page go to -ui.screenshots=DIR (make ui-screenshots
// writes them to docs/ui/).
package browsertest
