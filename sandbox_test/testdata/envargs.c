// envargs: a tool module (ABI v1, C with wasi-libc) that reports what it can
// see of its process: "argc=<n> argv0=<s> env=<NAME=value;…>" with every
// environment variable, in the order the host gave them.
#include <stdio.h>
#include <string.h>

extern char **environ;

int main(int argc, char **argv) {
	static char req[4096], out[8192];
	size_t n = fread(req, 1, sizeof req - 1, stdin);
	req[n] = 0;
	if (strstr(req, "\"method\":\"describe\"")) {
		fputs("{\"abi\":1,\"tools\":[{\"name\":\"environ\",\"grants\":{\"env\":[\"HOME\",\"SANDBOX_TOKEN\"]}}]}", stdout);
		return 0;
	}
	int off = snprintf(out, sizeof out, "argc=%d argv0=%s env=", argc, argc > 0 ? argv[0] : "");
	for (char **e = environ; e && *e && off < (int)sizeof out - 1; e++)
		off += snprintf(out + off, sizeof out - off, "%s;", *e);
	// Keep the JSON valid: the test's values contain no quote or backslash.
	printf("{\"content\":[{\"type\":\"text\",\"text\":\"%s\"}]}", out);
	return 0;
}
