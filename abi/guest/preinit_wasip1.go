//go:build wasip1 && wasmtask_preinit

package guest

import _ "unsafe" // go:linkname

// With the build tag wasmtask_preinit and -buildmode=c-shared, the module
// is a pre-initialisable tool (ABI.md section 13): _initialize starts the
// Go runtime and runs the package initialisers, and this _start runs the
// program's main function, which serves the request. The initialisers
// also warm encoding/json's caches (warm.go): they run once, at load.

// noWarm, set at link time (-ldflags=-X
// github.com/wasmtask/wasmtask/abi/guest.noWarm=1), turns warming off: the
// host's benchmarks build such a module to measure what warming saves.
var noWarm string

// started: _start has begun, so the initialisation (the snapshot) is over.
var started bool

// warming reports whether to warm caches now: while the packages
// initialise, which in this build happens once, at load; not once a call
// runs (a Handle built in main would warm in every call).
func warming() bool { return noWarm == "" && !started }

func init() {
	if warming() {
		warmSDK()
	}
}

//go:linkname mainMain main.main
func mainMain()

// start is the module's _start export.
//
//lint:ignore U1000 called by the host through go:wasmexport
//go:wasmexport _start
func start() {
	started = true
	mainMain()
}
