// spin — a bare module exporting spin(n) and fill(n): the loops of loop.h
// and nothing else (no WASI, no allocation), for the raw wazero side of the
// CPU-bound figure.
//
// Build: clang --target=wasm32 -mbulk-memory -nostdlib -O2 -Wl,--no-entry -Wl,--export=spin -Wl,--export=fill -Wl,--strip-debug -o spin.wasm spin.c
#include "loop.h"

unsigned spin(unsigned n) { return spin_loop(n); }

static unsigned char fill_buf[FILL_BYTES];

unsigned fill(unsigned n) { return fill_loop(fill_buf, n); }
