//go:build !race

package wasmrt

const raceEnabled = false
