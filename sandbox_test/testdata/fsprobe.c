// fsprobe: a tool module (ABI v1, C with wasi-libc) that tries to reach files
// it may or may not be granted. Every tool answers "ok:<detail>" or
// "err:<errno>" as its text, so the test can tell a refusal from success.
// Tools and arguments {"path":…, "target":…}:
//   read    the first line of path
//   write   creates or truncates path with "pwned"
//   symlink creates path as a symbolic link to target
//   remove  unlinks path
//   mkdir   creates directory path
//   race    reads path 3000 times; "ok:secret=<n> inside=<m> failed=<k>"
//           counts reads that saw "SECRET", "inside", or failed
// The request is parsed with strstr: enough for these tests, not for tools.
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *manifest =
    "{\"abi\":1,\"tools\":["
    "{\"name\":\"read\"},{\"name\":\"write\"},{\"name\":\"symlink\"},"
    "{\"name\":\"remove\"},{\"name\":\"mkdir\"},{\"name\":\"race\"}]}";

static char req[8192];

// arg copies the string member key of the request into out ("" if absent).
static void arg(const char *key, char *out, size_t n) {
	char pat[64];
	snprintf(pat, sizeof pat, "\"%s\":\"", key);
	const char *p = strstr(req, pat);
	size_t i = 0;
	if (p)
		for (p += strlen(pat); *p && *p != '"' && i < n - 1;) out[i++] = *p++;
	out[i] = 0;
}

static int tool(const char *name) {
	char pat[64];
	snprintf(pat, sizeof pat, "\"tool\":\"%s\"", name);
	return strstr(req, pat) != NULL;
}

static void answer(const char *text) {
	printf("{\"content\":[{\"type\":\"text\",\"text\":\"%s\"}]}", text);
}

static void result(int rc) {
	char buf[64];
	if (rc == 0)
		answer("ok:");
	else {
		snprintf(buf, sizeof buf, "err:%d", errno);
		answer(buf);
	}
}

// first reads the first line of path into line; returns 0 or -1 (errno set).
static int first(const char *path, char *line, size_t n) {
	FILE *f = fopen(path, "r");
	if (!f) return -1;
	if (!fgets(line, n, f)) line[0] = 0;
	fclose(f);
	line[strcspn(line, "\n\"\\")] = 0;
	return 0;
}

int main(void) {
	static char path[1024], target[1024], line[256], out[512];
	size_t n = fread(req, 1, sizeof req - 1, stdin);
	req[n] = 0;
	if (strstr(req, "\"method\":\"describe\"")) {
		fputs(manifest, stdout);
		return 0;
	}
	arg("path", path, sizeof path);
	arg("target", target, sizeof target);
	if (tool("read")) {
		if (first(path, line, sizeof line) != 0) {
			result(-1);
			return 0;
		}
		snprintf(out, sizeof out, "ok:%s", line);
		answer(out);
	} else if (tool("write")) {
		FILE *f = fopen(path, "w");
		if (!f) {
			result(-1);
			return 0;
		}
		int rc = fputs("pwned\n", f) < 0 ? -1 : 0;
		rc |= fclose(f);
		result(rc);
	} else if (tool("symlink")) {
		result(symlink(target, path));
	} else if (tool("remove")) {
		result(unlink(path));
	} else if (tool("mkdir")) {
		result(mkdir(path, 0755));
	} else if (tool("race")) {
		int secret = 0, inside = 0, failed = 0;
		for (int i = 0; i < 3000; i++) {
			if (first(path, line, sizeof line) != 0)
				failed++;
			else if (strstr(line, "SECRET"))
				secret++;
			else if (strstr(line, "inside"))
				inside++;
		}
		snprintf(out, sizeof out, "ok:secret=%d inside=%d failed=%d", secret, inside, failed);
		answer(out);
	} else {
		printf("{\"content\":[{\"type\":\"text\",\"text\":\"unknown tool\"}],\"isError\":true}");
	}
	return 0;
}
