#!/usr/bin/env bash
# Runs wasmtask against its peers side by side and rewrites BENCHMARKS.md
# at the repository root. Builds, into a temporary directory, the benchmark
# plugins from bench/plugins (clang with wasi-libc, as the C examples) and
# the wasmtask binary from this tree, then runs bench/cmd/wasmbench.
#
#   bench/run.sh                      # all figures, BENCHMARKS.md rewritten
#   bench/run.sh -figures 1,2 -rounds 3   # extra flags go to wasmbench; then
#                                         # the table is printed, the file kept
#
# Needs Go, clang, wasm-ld and wasi-libc (Debian: clang lld wasi-libc).
set -euo pipefail
bench="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$bench")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cc=(clang --target=wasm32-wasi --sysroot=/usr -O2 -nodefaultlibs -Wl,--strip-debug)
"${cc[@]}" -mbulk-memory -o "$work/benchtool.wasm" "$bench/plugins/benchtool.c" -lc
"${cc[@]}" -mexec-model=reactor -o "$work/extism_sha256.wasm" "$bench/plugins/extism_sha256.c" -lc
clang --target=wasm32 -mbulk-memory -nostdlib -O2 -Wl,--no-entry -Wl,--export=spin -Wl,--export=fill -Wl,--strip-debug \
  -o "$work/spin.wasm" "$bench/plugins/spin.c"
cp "$root/examples/go/preinit/demo-preinit.wasm" "$work/"

(cd "$root" && go build -o "$work/wasmtask" ./cmd/wasmtask)
# The product's requirements are the bench's too (replace ../): tidy first,
# so bench/go.mod follows a change of the root go.mod.
(cd "$bench" && go mod tidy && go build -o "$work/wasmbench" ./cmd/wasmbench)

args=(-plugins "$work" -wasmtask "$work/wasmtask")
if [ $# -eq 0 ]; then
  commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || true)"
  if [ -n "$(git -C "$root" status --porcelain -- . ":!BENCHMARKS.md" 2>/dev/null)" ]; then commit="$commit (with uncommitted changes)"; fi
  args+=(-markdown "$root/BENCHMARKS.md" -command "bench/run.sh" -commit "$commit")
fi
"$work/wasmbench" "${args[@]}" "$@"
