// benchtool — the wasmtask tool module of the benchmarks (ABI v1, see
// abi/ABI.md). It relies on the compact request the host writes (section 2)
// and reads only the one number argument its tools take.
//
//   - noop  (taskSupport optional): answers "ok"; the trivial tool of the
//     HTTP and task figures.
//   - sleep (taskSupport optional): sleeps {"ms": n} milliseconds (WASI
//     poll_oneoff), then answers "ok"; the blocked task of the memory figure.
//   - spin  (taskSupport forbidden): runs the loop of spin.c {"n": n} times
//     and answers its value; the CPU-bound figure.
//   - fill  (taskSupport forbidden): n memsets of 1 MiB (memory.fill), and
//     answers a byte of the buffer; the bulk-memory row of that figure.
//
// Build: clang --target=wasm32-wasi --sysroot=/usr -mbulk-memory -O2 -nodefaultlibs -Wl,--strip-debug -o benchtool.wasm benchtool.c -lc
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wasi/api.h>

#include "loop.h"

static const char manifest[] =
    "{\"abi\":1,\"name\":\"benchtool\",\"tools\":["
    "{\"name\":\"noop\",\"description\":\"Answers ok.\",\"inputSchema\":{\"type\":\"object\"},\"taskSupport\":\"optional\"},"
    "{\"name\":\"sleep\",\"description\":\"Sleeps ms milliseconds.\",\"inputSchema\":{\"type\":\"object\","
    "\"properties\":{\"ms\":{\"type\":\"integer\",\"minimum\":0}}},\"taskSupport\":\"optional\"},"
    "{\"name\":\"spin\",\"description\":\"Runs a CPU-bound loop n times.\",\"inputSchema\":{\"type\":\"object\","
    "\"properties\":{\"n\":{\"type\":\"integer\",\"minimum\":0}},\"required\":[\"n\"]},\"taskSupport\":\"forbidden\"},"
    "{\"name\":\"fill\",\"description\":\"Fills 1 MiB n times.\",\"inputSchema\":{\"type\":\"object\","
    "\"properties\":{\"n\":{\"type\":\"integer\",\"minimum\":0}},\"required\":[\"n\"]},\"taskSupport\":\"forbidden\"}"
    "]}";

// number returns the non-negative integer after "key": inside the
// arguments, or 0.
static unsigned long long number(const char *args, const char *key) {
    char pat[16];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = args ? strstr(args, pat) : NULL;
    unsigned long long v = 0;
    if (!p) return 0;
    for (p += strlen(pat); *p >= '0' && *p <= '9' && v < 1000000000000ull; p++) v = v * 10 + (unsigned long long)(*p - '0');
    return v;
}

// sleep_ms blocks in WASI poll_oneoff on a relative clock subscription
// (usleep would pull in 128-bit arithmetic from compiler-rt).
static void sleep_ms(unsigned long long ms) {
    __wasi_subscription_t sub = {0};
    __wasi_event_t ev;
    __wasi_size_t n;
    sub.u.tag = __WASI_EVENTTYPE_CLOCK;
    sub.u.u.clock.id = __WASI_CLOCKID_MONOTONIC;
    sub.u.u.clock.timeout = ms * 1000000ull;
    __wasi_errno_t err = __wasi_poll_oneoff(&sub, &ev, 1, &n);
    (void)err; // an error returns early: the answer is "ok" either way
}

int main(void) {
    static char req[1 << 16];
    size_t n = fread(req, 1, sizeof req - 1, stdin);
    req[n] = 0;
    if (strncmp(req, "{\"abi\":1,", 9) != 0) {
        fprintf(stderr, "benchtool: built for wasmtask ABI v1, got request %.40s\n", req);
        return 2;
    }
    if (strstr(req, "\"method\":\"describe\"")) {
        fputs(manifest, stdout);
        return 0;
    }
    const char *args = strstr(req, "\"arguments\":");
    if (strstr(req, "\"tool\":\"noop\"")) {
        fputs("{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}", stdout);
        return 0;
    }
    if (strstr(req, "\"tool\":\"sleep\"")) {
        sleep_ms(number(args, "ms"));
        fputs("{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}", stdout);
        return 0;
    }
    if (strstr(req, "\"tool\":\"spin\"")) {
        printf("{\"content\":[{\"type\":\"text\",\"text\":\"%u\"}]}", spin_loop((unsigned)number(args, "n")));
        return 0;
    }
    if (strstr(req, "\"tool\":\"fill\"")) {
        unsigned char *buf = malloc(FILL_BYTES);
        if (!buf) return 1;
        printf("{\"content\":[{\"type\":\"text\",\"text\":\"%u\"}]}", fill_loop(buf, (unsigned)number(args, "n")));
        return 0;
    }
    fputs("{\"content\":[{\"type\":\"text\",\"text\":\"unknown tool\"}],\"isError\":true}", stdout);
    return 0;
}
