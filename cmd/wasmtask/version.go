package main

import "runtime/debug"

// version is reported by `wasmtask --version` and as the MCP serverInfo
// version. Release builds set it with -ldflags "-X main.version=v1.2.3";
// otherwise a binary built by `go install module@version` reports that
// module version, and any other build "dev".
var version = "dev"

func init() {
	if version != "dev" {
		return
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		version = bi.Main.Version
	}
}
