//go:build wasip1 && wasmtask_preinit

package guest

import _ "unsafe" // go:linkname

// With the build tag wasmtask_preinit and -buildmode=c-shared, the module
// is a pre-initialisable tool (ABI.md section 13): _initialize starts the
// Go runtime and runs the package initialisers, and this _start runs the
// program's main function, which serves the request.

//go:linkname mainMain main.main
func mainMain()

//go:wasmexport _start
func start() { mainMain() }
