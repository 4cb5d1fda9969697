// prims.c — a tool, a resource, a resource template and a prompt in C
// (ABI 1.2, abi/ABI.md section 14). Like section 10's hello it reads the
// compact request without a JSON library: each method starts right after
// {"abi":1, and the strings it echoes are copied still JSON-escaped, so
// they stay valid JSON.
//
// build, with wasmtask.h beside it:
//   clang --target=wasm32-wasi --sysroot=/usr -O2 -nodefaultlibs -o prims.wasm prims.c -lc
#include <stdio.h>
#include <string.h>

#include "wasmtask.h"

static const char manifest[] =
    "{\"abi\":1,\"revision\":2,"
    "\"tools\":[{\"name\":\"week\",\"description\":\"Links the notes of each working day.\","
    "\"inputSchema\":{\"type\":\"object\"}}],"
    "\"resources\":[{\"uri\":\"notes://readme\",\"name\":\"readme\",\"title\":\"About these notes\","
    "\"mimeType\":\"text/plain\"}],"
    "\"resourceTemplates\":[{\"uriTemplate\":\"notes://days/{day}\",\"name\":\"day\","
    "\"description\":\"The notes of a working day, monday to friday.\",\"mimeType\":\"text/plain\"}],"
    "\"prompts\":[{\"name\":\"plan\",\"description\":\"Plans a working day from its notes.\","
    "\"arguments\":[{\"name\":\"day\",\"description\":\"monday to friday\",\"required\":true}]}]}";

static const char *const days[] = {"monday", "tuesday", "wednesday", "thursday", "friday"};
static const char *const notes[] = {"Standup at nine.", "Write the report.", "Review two pull requests.",
                                    "Release day.", "Retrospective."};

static int starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

// string_after returns the JSON string that follows key in req, still
// escaped, and sets *n to its length; NULL when key is absent. A key with
// its quotes cannot occur inside a string, where quotes are escaped.
static const char *string_after(const char *req, const char *key, int *n) {
    const char *p = strstr(req, key);
    if (!p) return NULL;
    p += strlen(key);
    const char *q = p;
    while (*q && *q != '"') q += (*q == '\\' && q[1]) ? 2 : 1;
    *n = (int)(q - p);
    return p;
}

// day_notes returns the notes of the day named by the variable or argument
// "day" of req, or NULL; *day and *n are the day as the request wrote it.
static const char *day_notes(const char *req, const char **day, int *n) {
    *day = string_after(req, "\"day\":\"", n);
    for (int i = 0; *day && i < 5; i++)
        if ((int)strlen(days[i]) == *n && strncmp(*day, days[i], *n) == 0) return notes[i];
    if (!*day) *day = "", *n = 0;
    return NULL;
}

int main(void) {
    static char req[1 << 16];
    size_t len = fread(req, 1, sizeof req - 1, stdin);
    req[len] = 0;
    if (!starts(req, "{\"abi\":1,")) {
        fprintf(stderr, "prims: built for wasmtask ABI v1, got request %.40s\n", req);
        return 2;
    }
    const char *m = req + 9, *day;
    int n;
    if (starts(m, "\"method\":\"describe\"")) {
        fputs(manifest, stdout);
    } else if (starts(m, "\"method\":\"call\",\"tool\":\"week\"")) {
        fputs("{\"content\":[{\"type\":\"text\",\"text\":\"The notes of the week:\"}", stdout);
        for (int i = 0; i < 5; i++)
            printf(",{\"type\":\"resource_link\",\"uri\":\"notes://days/%s\",\"name\":\"%s\","
                   "\"mimeType\":\"text/plain\"}", days[i], days[i]);
        fputs("]}", stdout);
    } else if (starts(m, "\"method\":\"read\",\"uri\":\"notes://readme\"")) {
        fputs("{\"contents\":[{\"uri\":\"notes://readme\",\"mimeType\":\"text/plain\","
              "\"text\":\"One note per working day: notes://days/monday to notes://days/friday.\"}]}", stdout);
    } else if (starts(m, "\"method\":\"read\"")) { // a URI of the template notes://days/{day}
        const char *text = day_notes(req, &day, &n);
        if (!text) {
            char msg[128];
            wt_log(2, msg, snprintf(msg, sizeof msg, "no notes for day %.*s", n > 64 ? 64 : n, day));
            fputs("{\"error\":{\"code\":-32002,\"message\":\"no notes for that day\"}}", stdout);
            return 0;
        }
        int un;
        const char *uri = string_after(req, "\"uri\":\"", &un);
        printf("{\"contents\":[{\"uri\":\"%.*s\",\"mimeType\":\"text/plain\",\"text\":\"%s\"}]}", un, uri, text);
    } else if (starts(m, "\"method\":\"prompt\"")) { // plan, the one prompt
        const char *text = day_notes(req, &day, &n);
        if (!text) {
            fputs("{\"error\":{\"code\":-32602,\"message\":\"day must be a working day, monday to friday\"}}", stdout);
            return 0;
        }
        printf("{\"description\":\"A plan for %.*s\",\"messages\":[{\"role\":\"user\",\"content\":"
               "{\"type\":\"text\",\"text\":\"My notes for %.*s: %s Plan my day.\"}}]}", n, day, n, day, text);
    } else {
        fprintf(stderr, "prims: unknown request %.60s\n", req);
        return 1;
    }
    return 0;
}
