package defaulttools

import "embed"

// FS holds the default tool modules, one *.wasm file per module, at its root.
//
//go:embed *.wasm
var FS embed.FS
