// blocks: a tool module (ABI v1, C with wasi-libc) whose results cost the
// host by their counts more than by their bytes.
//
//	blocks    20,000 text blocks of one character (540 KB)
//	values    structuredContent with an array of 150,000 numbers (300 KB)
//	deep      structuredContent nested 100 levels (the result: 102)
//	flood     2,400,000 text blocks of one character (61.8 MiB)
//	wide      10,000 text blocks of 6,455 characters (61.8 MiB)
//	oneblock  one text block of 64,799,974 characters (61.8 MiB)
//
// The last three write the same bytes, for BenchmarkOutputRSS.
#include <stdio.h>
#include <string.h>

static char req[4096];
static char out[1 << 16];
static char xs[1 << 16];

static int is(const char *tool) {
	char want[64];
	snprintf(want, sizeof want, "\"tool\":\"%s\"", tool);
	return strstr(req, want) != NULL;
}

static void blocks(long count, long textlen) {
	fputs("{\"content\":[", stdout);
	for (long i = 0; i < count; i++) {
		fputs(i ? ",{\"type\":\"text\",\"text\":\"" : "{\"type\":\"text\",\"text\":\"", stdout);
		for (long left = textlen; left > 0;) {
			long n = left < (long)sizeof xs ? left : (long)sizeof xs;
			fwrite(xs, 1, n, stdout);
			left -= n;
		}
		fputs("\"}", stdout);
	}
	fputs("]}", stdout);
}

int main(void) {
	setvbuf(stdout, out, _IOFBF, sizeof out);
	memset(xs, 'x', sizeof xs);
	size_t n = fread(req, 1, sizeof req - 1, stdin);
	req[n] = 0;
	if (strstr(req, "\"method\":\"describe\"")) {
		fputs("{\"abi\":1,\"tools\":[{\"name\":\"blocks\"},{\"name\":\"values\"},{\"name\":\"deep\"},"
		      "{\"name\":\"flood\"},{\"name\":\"wide\"},{\"name\":\"oneblock\"}]}", stdout);
		return 0;
	}
	if (is("blocks")) {
		blocks(20000, 1);
	} else if (is("flood")) {
		blocks(2400000, 1);
	} else if (is("wide")) {
		blocks(10000, 6455);
	} else if (is("oneblock")) {
		blocks(1, 64799974);
	} else if (is("values")) {
		fputs("{\"content\":[],\"structuredContent\":{\"a\":[0", stdout);
		for (int i = 1; i < 150000; i++)
			fputs(",0", stdout);
		fputs("]}}", stdout);
	} else if (is("deep")) {
		fputs("{\"content\":[{\"type\":\"text\",\"text\":\"deep\"}],\"structuredContent\":{\"a\":", stdout);
		for (int i = 0; i < 100; i++)
			fputc('[', stdout);
		for (int i = 0; i < 100; i++)
			fputc(']', stdout);
		fputs("}}", stdout);
	}
	return 0;
}
