//go:build race

package wasmrt

// raceEnabled: the race detector makes Go frames larger than in the
// product, so the interpreter's frame size is not measured under it.
const raceEnabled = true
