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

#define FILL_BYTES (1u << 20)

// fill_loop fills buf (FILL_BYTES long) n times. The caller owns buf, so that
// benchtool allocates it only for its fill calls and its other tools (the
// memory figure's sleep) start as small as before.
static unsigned fill_loop(unsigned char *buf, unsigned n) {
    for (unsigned i = 0; i < n; i++) {
        __builtin_memset(buf, (int)i, FILL_BYTES);
        __asm__ volatile("" ::: "memory");
    }
    return buf[n % FILL_BYTES];
}
