//go:build !race

package room

// raceDetector: see race_test.go.
const raceDetector = false
