// loop.h — the CPU-bound loop shared by spin.c (raw wazero) and benchtool.c
// (through wasmtask): a xorshift32 step per iteration, which the compiler
// cannot fold into a closed form.
static unsigned spin_loop(unsigned n) {
    unsigned x = 2463534242u;
    for (unsigned i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
    }
    return x;
}
