//go:build race

package room

// raceDetector: the race detector slows every request ten times; the heaviest tests shrink.
const raceDetector = true
