// spin — a bare module exporting spin(n): the loop of loop.h and nothing
// else (no WASI, no allocation), for the raw wazero side of the CPU-bound
// figure.
//
// Build: clang --target=wasm32 -nostdlib -O2 -Wl,--no-entry -Wl,--export=spin -Wl,--strip-debug -o spin.wasm spin.c
#include "loop.h"

unsigned spin(unsigned n) { return spin_loop(n); }
