//go:build race

package sandbox_test

// raceEnabled: the race detector slows the host's Go code (a snapshot's
// encoding among it) several times, past limits that are wall-clock times.
const raceEnabled = true
