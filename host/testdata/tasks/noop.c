// noop: a tool module (ABI v1, C with wasi-libc) whose one tool does
// nothing, so that a benchmark of the task round trip measures the server
// and not the guest. Its shape is a plain C tool's: the request read from
// stdin into a static buffer, stdio for the answer.
//
//   noop {}   answers "ok"
#include <stdio.h>
#include <string.h>

static const char manifest[] =
    "{\"abi\":1,\"tools\":[{\"name\":\"noop\",\"description\":\"Answers ok.\","
    "\"inputSchema\":{\"type\":\"object\"},\"taskSupport\":\"optional\"}]}";

int main(void) {
    static char req[1 << 16];
    size_t n = fread(req, 1, sizeof req - 1, stdin);
    req[n] = 0;
    if (strstr(req, "\"method\":\"describe\"")) {
        fputs(manifest, stdout);
        return 0;
    }
    fputs("{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}", stdout);
    return 0;
}
