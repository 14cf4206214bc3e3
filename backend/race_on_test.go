//go:build race

package backend

// raceEnabled: the race detector slows this binary several times over.
const raceEnabled = true
