//go:build !race

package queryeval_test

// raceEnabled: the race detector is on (it slows evaluation ~10×).
const raceEnabled = false
