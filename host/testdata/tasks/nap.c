// nap: a tool module (ABI v1, C with wasi-libc) whose one tool sleeps,
// so that a benchmark can hold many calls running at once. Its shape is a
// plain C tool's: the request read from stdin into a static buffer,
// stdio for the answer.
//
//   nap {"ms":N}   reports progress 0 (so that a client knows it runs),
//                  sleeps N milliseconds, then answers "slept"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wasi/api.h>

__attribute__((import_module("wasmtask_v1"), import_name("progress")))
void wt_progress(double progress, double total, const char *msg, int msg_len);

static const char manifest[] =
    "{\"abi\":1,\"tools\":[{\"name\":\"nap\",\"description\":\"Sleeps ms milliseconds.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"ms\":{\"type\":\"integer\",\"minimum\":0}}},"
    "\"taskSupport\":\"optional\"}]}";

int main(void) {
    static char req[1 << 16];
    size_t n = fread(req, 1, sizeof req - 1, stdin);
    req[n] = 0;
    if (strstr(req, "\"method\":\"describe\"")) {
        fputs(manifest, stdout);
        return 0;
    }
    unsigned long long ms = 0;
    const char *p = strstr(req, "\"ms\":");
    for (p = p ? p + 5 : ""; *p >= '0' && *p <= '9'; p++) ms = ms * 10 + (unsigned)(*p - '0');
    wt_progress(0, 1, "asleep", 6);
    // poll_oneoff on a relative clock: wasi-libc's nanosleep and strtol
    // need compiler-rt, which Debian's wasi-libc does not ship.
    __wasi_subscription_t sub = {0};
    sub.u.tag = __WASI_EVENTTYPE_CLOCK;
    sub.u.u.clock.id = __WASI_CLOCKID_MONOTONIC;
    sub.u.u.clock.timeout = ms * 1000000ull;
    __wasi_event_t ev;
    __wasi_size_t got;
    __wasi_poll_oneoff(&sub, &ev, 1, &got);
    fputs("{\"content\":[{\"type\":\"text\",\"text\":\"slept\"}]}", stdout);
    return 0;
}
