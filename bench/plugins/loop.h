// loop.h — the CPU-bound loops shared by spin.c (raw wazero) and
// benchtool.c (through wasmtask): a xorshift32 step per iteration, which the
// compiler cannot fold into a closed form; and n memsets of a 1 MiB buffer,
// one memory.fill each when built with -mbulk-memory (the empty asm with a
// memory clobber keeps the compiler from merging them).
static unsigned spin_loop(unsigned n) {
    unsigned x = 2463534242u;
    for (unsigned i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
    }
    return x;
}

static unsigned char fill_buf[1 << 20];

static unsigned fill_loop(unsigned n) {
    for (unsigned i = 0; i < n; i++) {
        __builtin_memset(fill_buf, (int)i, sizeof fill_buf);
        __asm__ volatile("" ::: "memory");
    }
    return fill_buf[n % sizeof fill_buf];
}
