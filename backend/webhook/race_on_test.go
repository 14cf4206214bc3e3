//go:build race

package webhook_test

// raceEnabled: the race detector slows this binary several times over.
const raceEnabled = true
