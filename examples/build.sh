#!/usr/bin/env bash
# Builds the example tool modules, reproducibly, into host/defaulttools (the
# server's embedded default tool set) or into the directory given with -o.
#
#   examples/build.sh                 # the embedded ones into host/defaulttools
#   examples/build.sh -o /tmp/x go c  # some languages into /tmp/x
#
# Languages: go (demo.wasm), c (sha256.wasm), wat (add.wasm), embedded in
# the server; rust (wordfreq.wasm) and assemblyscript (caesar.wasm), built
# and tested but not embedded, so need -o; go-preinit (demo-preinit.wasm,
# checked in under examples/go/preinit) is the Go demo built
# pre-initialisable (ABI.md section 13). The same toolchain versions give
# the same bytes: build_test.go rebuilds every embedded module and compares
# it with the checked-in one.
#
# The Rust and AssemblyScript builds run the very commands abi/ABI.md gives
# (abimd_test.go checks that this file contains them), in the example's own
# directory as a plugin author would, then copy the module to the output.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/host/defaulttools"
if [[ "${1:-}" == "-o" ]]; then
	[[ $# -ge 2 ]] || { echo "usage: $0 [-o outdir] [go|c|wat|rust|assemblyscript|conformance|go-preinit ...]" >&2; exit 2; }
	out="$2"
	shift 2
fi
langs=("$@")
[[ ${#langs[@]} -gt 0 ]] || langs=(go c wat)
mkdir -p "$out"
out="$(cd "$out" && pwd)"

build_go() {
	# No VCS stamp, no build ID, no local paths: the bytes depend only on the
	# sources and the Go version. GOFLAGS/GOWASM from the caller's
	# environment would change the code, so they are cleared.
	(cd "$root" && env GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 GOFLAGS= GOWASM= GOTOOLCHAIN=local \
		go build -trimpath -buildvcs=false -ldflags=-buildid= -o "$out/demo.wasm" ./examples/go/demo)
}

# The Go demo as a pre-initialised module (ABI.md section 13): a reactor
# whose _initialize the host runs once, at load. Not embedded, so that the
# embedded demo stays the plain command build any host runs:
#   examples/build.sh -o examples/go/preinit go-preinit
build_go-preinit() {
	(cd "$root" && env GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 GOFLAGS= GOWASM= GOTOOLCHAIN=local \
		go build -buildmode=c-shared -tags wasmtask_preinit -trimpath -buildvcs=false -ldflags=-buildid= \
		-o "$out/demo-preinit.wasm" ./examples/go/demo)
}

# The tools the MCP conformance suite calls (not part of the default tools):
#   examples/build.sh -o examples/conformance/tools conformance
build_conformance() {
	(cd "$root" && env GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 GOFLAGS= GOWASM= GOTOOLCHAIN=local \
		go build -trimpath -buildvcs=false -ldflags=-buildid= -o "$out/conformance.wasm" ./examples/conformance)
}

build_c() {
	# -nodefaultlibs -lc: link wasi-libc without compiler-rt's wasm32
	# builtins, which Debian ships in a separate package; the tool needs none.
	# --strip-debug drops the DWARF that Debian's libc.a carries (120 KB) and
	# keeps the name section, so traps still name functions.
	(cd "$root/examples/c" && clang --target=wasm32-wasi --sysroot=/usr -O2 -Wall -Wextra -Werror \
		-nodefaultlibs -Wl,--strip-debug -o "$out/sha256.wasm" sha256.c -lc)
}

build_wat() {
	(cd "$root/examples/wat" && wat2wasm add.wat -o "$out/add.wasm")
}

# rust_bin prints the directory of the first rustc that builds for
# wasm32-wasi (the target and its standard library): the first on PATH, or
# Debian's in /usr/bin when a newer toolchain (rustup's, which names the
# target wasm32-wasip1 only) comes first.
rust_bin() {
	local rustc lib
	for rustc in "$(command -v rustc || true)" /usr/bin/rustc; do
		[[ -x "$rustc" ]] || continue
		lib="$("$rustc" --print target-libdir --target wasm32-wasi 2>/dev/null)" || continue
		compgen -G "$lib/libstd-*.rlib" >/dev/null && { dirname "$rustc"; return; }
	done
	return 0
}

build_rust() {
	# --offline --locked: the crates are the workspace's own (no crates.io),
	# and Cargo.lock is checked in. cargo and rustc come from rust_bin's
	# directory when it found one.
	local bin
	bin="$(rust_bin)"
	(cd "$root/examples/rust" && PATH="${bin:+$bin:}$PATH" cargo build --offline --locked --release --target wasm32-wasi &&
		cp target/wasm32-wasi/release/wordfreq.wasm "$out/wordfreq.wasm")
}

build_assemblyscript() {
	# Needs node_modules from npm ci in examples/assemblyscript (.ci/run does it).
	(cd "$root/examples/assemblyscript" && npx asc assembly/index.ts --config node_modules/@assemblyscript/wasi-shim/asconfig.json -O3 -o tool.wasm &&
		mv tool.wasm "$out/caesar.wasm")
}

for lang in "${langs[@]}"; do
	case "$lang" in
	go) build_go ;;
	c) build_c ;;
	wat) build_wat ;;
	rust | assemblyscript | conformance | go-preinit)
		# Not embedded: host/defaulttools holds only what the server ships.
		[[ "$out" != "$root/host/defaulttools" ]] || { echo "$0: $lang is not embedded; give -o DIR" >&2; exit 2; }
		"build_$lang"
		;;
	*) echo "$0: unknown language $lang (want go, c, wat, rust, assemblyscript, conformance or go-preinit)" >&2; exit 2 ;;
	esac
done

if [[ "$out" == "$root/host/defaulttools" && ${#langs[@]} -eq 3 ]]; then
	{
		echo "# Toolchains that built the *.wasm files here (examples/build.sh)."
		go version
		clang --version | head -n 1
		echo "wat2wasm $(wat2wasm --version)"
	} >"$out/toolchains.txt"
fi
