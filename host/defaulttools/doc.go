// Package defaulttools embeds the server's default tool set: the example tool
// modules of examples/, built by examples/build.sh and checked in here.
//
//	demo.wasm    Go (abi/guest): word_count, slow_count, long_job
//	sha256.wasm  C (wasi-libc):  sha256
//	add.wasm     WAT:            add
//
// The files are build outputs; examples/examples_test.go rebuilds them from
// their sources and fails when the bytes differ, so what is embedded is what
// the sources say. Rebuild with examples/build.sh after changing an example
// or a toolchain (toolchains.txt records the versions used).
//
// [FS] holds the *.wasm files at its root. It is read-only and safe for
// concurrent use.
package defaulttools
