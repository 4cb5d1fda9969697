// Test module for package wasmrt: a WASI command (ABI v1) that reads and
// writes files and environment variables, to test sandbox grants.
// Tools: read {"path":…} answers the file's first line; write {"path":…}
// creates the file with "written"; env {"path":NAME} answers getenv(NAME).
// The request is parsed with strstr: enough for these tests, not for tools.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *manifest =
    "{\"abi\":1,\"tools\":["
    "{\"name\":\"read\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}},"
    "{\"name\":\"write\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}},"
    "{\"name\":\"env\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"}}}}]}";

static void answer(const char *text, int isError) {
	printf("{\"content\":[{\"type\":\"text\",\"text\":\"%s\"}]%s}", text, isError ? ",\"isError\":true" : "");
}

int main(void) {
	static char req[8192], path[1024], line[256];
	size_t n = fread(req, 1, sizeof req - 1, stdin);
	req[n] = 0;
	if (strstr(req, "\"method\":\"describe\"")) {
		fputs(manifest, stdout);
		return 0;
	}
	const char *p = strstr(req, "\"path\":\"");
	if (!p) {
		answer("no path", 1);
		return 0;
	}
	p += 8;
	size_t i = 0;
	while (*p && *p != '"' && i < sizeof path - 1) path[i++] = *p++;
	path[i] = 0;
	if (strstr(req, "\"tool\":\"env\"")) {
		const char *v = getenv(path);
		answer(v ? v : "(unset)", 0);
		return 0;
	}
	if (strstr(req, "\"tool\":\"write\"")) {
		FILE *f = fopen(path, "w");
		if (!f) {
			answer("cannot write", 1);
			return 0;
		}
		fputs("written\n", f);
		fclose(f);
		answer("ok", 0);
		return 0;
	}
	FILE *f = fopen(path, "r");
	if (!f) {
		answer("cannot open", 1);
		return 0;
	}
	if (!fgets(line, sizeof line, f)) line[0] = 0;
	fclose(f);
	line[strcspn(line, "\n\"\\")] = 0;
	answer(line, 0);
	return 0;
}
