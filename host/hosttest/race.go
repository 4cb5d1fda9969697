//go:build race

package hosttest

// raceEnabled: this binary runs under the race detector.
const raceEnabled = true
