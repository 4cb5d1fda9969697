//go:build !(wasip1 && wasmtask_preinit)

package guest

// warming reports whether initialisers should warm caches: not in a
// command build (or a host-side one), which runs the initialisers in
// every call.
func warming() bool { return false }
