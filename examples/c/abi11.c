// abi11.c — the ABI 1.1 additions in C (abi/ABI.md section 12): two
// questions pending at once (elicit_all), a task that begins after its
// questions (begin_task, taskStart begin_task), and a protocol error as a
// call's outcome.
//
// build, with wasmtask.h beside it: clang --target=wasm32-wasi --sysroot=/usr -O2 -nodefaultlibs -o abi11.wasm abi11.c -lc
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wasmtask.h"

static const char manifest[] =
    "{\"abi\":1,\"tools\":["
    "{\"name\":\"two_questions\",\"description\":\"Asks a name and a confirmation at once, then works as a task.\","
    "\"inputSchema\":{\"type\":\"object\"},\"taskSupport\":\"required\",\"taskStart\":\"begin_task\"},"
    "{\"name\":\"unavailable\",\"description\":\"Cannot serve any request: answers a protocol error.\","
    "\"inputSchema\":{\"type\":\"object\"},\"taskSupport\":\"optional\"}]}";

static const char questions[] =
    "[{\"message\":\"Enter your name:\",\"requestedSchema\":{\"type\":\"object\","
    "\"properties\":{\"name\":{\"type\":\"string\"}},\"required\":[\"name\"]}},"
    "{\"message\":\"Confirm action?\",\"requestedSchema\":{\"type\":\"object\","
    "\"properties\":{\"confirm\":{\"type\":\"boolean\"}},\"required\":[\"confirm\"]}}]";

int main(void) {
    static char req[1 << 16];
    size_t n = fread(req, 1, sizeof req - 1, stdin);
    req[n] = 0;
    if (strncmp(req, "{\"abi\":1,", 9) != 0) {
        fprintf(stderr, "abi11: built for wasmtask ABI v1, got request %.40s\n", req);
        return 2;
    }
    if (strstr(req, "\"method\":\"describe\"")) {
        fputs(manifest, stdout);
        return 0;
    }
    if (strstr(req, "\"tool\":\"unavailable\"")) {
        fputs("{\"error\":{\"code\":-32603,\"message\":\"the backing store is unreachable\"}}", stdout);
        return 0;
    }
    int len = wt_elicit_all(questions, sizeof questions - 1);
    if (len < 0) {
        printf("{\"content\":[{\"type\":\"text\",\"text\":\"no answers (%d)\"}],\"isError\":true}", len);
        return 0;
    }
    char *answers = wt_reply_alloc(len);
    if (!answers) {
        return 3;
    }
    int task = wt_begin_task(); // the questions are answered: the long part runs as a task
    // The answers are a JSON array of two replies; a tool with a JSON
    // library would decode them. This one only echoes them, escaped.
    printf("{\"content\":[{\"type\":\"text\",\"text\":\"task=%d answers=", task);
    for (char *p = answers; *p; p++) {
        if (*p == '"' || *p == '\\') putchar('\\');
        putchar(*p);
    }
    fputs("\"}]}", stdout);
    free(answers);
    return 0;
}
