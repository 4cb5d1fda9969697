// badlist: a tool module (ABI v1, C with wasi-libc) whose manifest has an
// inputSchema that MCP clients refuse when they list tools (a property
// schema that is not an object). The host must refuse the module, not
// forward the schema: one such tool would fail tools/list for everyone.
#include <stdio.h>
#include <string.h>

int main(void) {
	static char req[4096];
	size_t n = fread(req, 1, sizeof req - 1, stdin);
	req[n] = 0;
	if (strstr(req, "\"method\":\"describe\"")) {
		fputs("{\"abi\":1,\"tools\":[{\"name\":\"bad_list\",\"inputSchema\":"
		      "{\"type\":\"object\",\"properties\":{\"x\":true},\"required\":\"x\"}}]}", stdout);
		return 0;
	}
	fputs("{\"content\":[]}", stdout);
	return 0;
}
