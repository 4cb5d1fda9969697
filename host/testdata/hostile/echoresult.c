// echoresult: a tool module (ABI v1, C with wasi-libc) whose result is
// whatever its caller asks for, so that a test can make any output a
// module could write reach the host.
//
//   echo_result {…}        writes its arguments object as the result
//   echo_structured {…}    the same, for a tool that declares an
//                          outputSchema ({"n": integer}, required)
//   echo_result {"deep":N} writes a result whose structuredContent nests N
//                          objects (arguments that deep may be refused)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *read_all(size_t *len) {
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap + 1);
	for (;;) {
		size_t got = fread(buf + n, 1, cap - n, stdin);
		n += got;
		if (got == 0) break;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
		}
	}
	buf[n] = 0;
	*len = n;
	return buf;
}

int main(void) {
	size_t n;
	char *req = read_all(&n);
	if (strstr(req, "\"method\":\"describe\"")) {
		fputs("{\"abi\":1,\"tools\":[{\"name\":\"echo_result\",\"inputSchema\":{\"type\":\"object\"}},"
		      "{\"name\":\"echo_structured\",\"inputSchema\":{\"type\":\"object\"},\"outputSchema\":"
		      "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}},\"required\":[\"n\"]}}]}", stdout);
		return 0;
	}
	// The host writes {"abi":1,"method":"call","tool":"…","arguments":ARGS}.
	char *args = strstr(req, "\"arguments\":");
	char *end = strrchr(req, '}');
	if (!args || !end) return 1;
	args += strlen("\"arguments\":");
	if (strncmp(args, "{\"deep\":", 8) == 0) {
		int deep = atoi(args + 8);
		fputs("{\"content\":[],\"structuredContent\":", stdout);
		for (int i = 0; i < deep; i++) fputs("{\"a\":", stdout);
		fputs("1", stdout);
		for (int i = 0; i < deep; i++) fputs("}", stdout);
		fputs("}", stdout);
		return 0;
	}
	fwrite(args, 1, (size_t)(end - args), stdout);
	return 0;
}
