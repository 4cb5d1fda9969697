#!/usr/bin/env bash
# Builds the example tool modules, reproducibly, into host/defaulttools (the
# server's embedded default tool set) or into the directory given with -o.
#
#   examples/build.sh                 # all languages into host/defaulttools
#   examples/build.sh -o /tmp/x go c  # some languages into /tmp/x
#
# Languages: go (demo.wasm), c (sha256.wasm), wat (add.wasm).
# The same toolchain versions give the same bytes: build_test.go rebuilds
# every module and compares it with the checked-in one.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/host/defaulttools"
if [[ "${1:-}" == "-o" ]]; then
	[[ $# -ge 2 ]] || { echo "usage: $0 [-o outdir] [go|c|wat ...]" >&2; exit 2; }
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

for lang in "${langs[@]}"; do
	case "$lang" in
	go) build_go ;;
	c) build_c ;;
	wat) build_wat ;;
	conformance) build_conformance ;;
	*) echo "$0: unknown language $lang (want go, c or wat)" >&2; exit 2 ;;
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
