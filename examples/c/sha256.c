// sha256 — a wasmtask tool module in C (ABI v1, see abi/ABI.md).
//
// Tool "sha256" hashes the UTF-8 bytes of its "text" argument and returns the
// hex digest, as text and as structured content {"sha256": "...", "bytes": n}.
// It reports progress through the optional wasmtask_v1.progress import.
//
// Build: clang --target=wasm32-wasi --sysroot=/usr -O2 -nodefaultlibs -Wl,--strip-debug -o sha256.wasm sha256.c -lc
//
// The JSON reader below is small but complete for what it reads: it walks
// any valid JSON value (so members may come in any order, with any
// whitespace), decodes string escapes including \uXXXX surrogate pairs, and
// refuses malformed input instead of guessing.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wasmtask.h"

static const char manifest[] =
    "{\"abi\":1,\"name\":\"sha256\",\"tools\":[{"
    "\"name\":\"sha256\","
    "\"title\":\"SHA-256\","
    "\"description\":\"Returns the SHA-256 digest (lowercase hex) of the UTF-8 bytes of text.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\",\"description\":\"the text to hash\"}},\"required\":[\"text\"]},"
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"sha256\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"}},\"required\":[\"sha256\",\"bytes\"]},"
    "\"annotations\":{\"readOnlyHint\":true,\"idempotentHint\":true,\"openWorldHint\":false},"
    "\"taskSupport\":\"forbidden\","
    "\"cache\":{\"cacheable\":true,\"ttlMs\":86400000}"
    "}]}";

/* ---- SHA-256 (FIPS 180-4) ---- */

typedef struct {
    uint32_t h[8];
    uint64_t len;
    uint8_t buf[64];
    size_t nbuf;
} sha256_ctx;

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void sha256_block(sha256_ctx *c, const uint8_t *p) {
    uint32_t w[64], a, b, d, e, f, g, h, cc, t1, t2;
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    a = c->h[0], b = c->h[1], cc = c->h[2], d = c->h[3], e = c->h[4], f = c->h[5], g = c->h[6], h = c->h[7];
    for (int i = 0; i < 64; i++) {
        t1 = h + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & cc) ^ (b & cc));
        h = g, g = f, f = e, e = d + t1, d = cc, cc = b, b = a, a = t1 + t2;
    }
    c->h[0] += a, c->h[1] += b, c->h[2] += cc, c->h[3] += d, c->h[4] += e, c->h[5] += f, c->h[6] += g, c->h[7] += h;
}

static void sha256_init(sha256_ctx *c) {
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, h0, sizeof h0);
    c->len = 0;
    c->nbuf = 0;
}

static void sha256_update(sha256_ctx *c, const uint8_t *p, size_t n) {
    c->len += n;
    while (n > 0) {
        size_t k = 64 - c->nbuf;
        if (k > n) k = n;
        memcpy(c->buf + c->nbuf, p, k);
        c->nbuf += k, p += k, n -= k;
        if (c->nbuf == 64) {
            sha256_block(c, c->buf);
            c->nbuf = 0;
        }
    }
}

static void sha256_final(sha256_ctx *c, uint8_t out[32]) {
    uint64_t bits = c->len * 8;
    uint8_t pad = 0x80, zero = 0, lenbe[8];
    sha256_update(c, &pad, 1);
    while (c->nbuf != 56) sha256_update(c, &zero, 1);
    for (int i = 0; i < 8; i++) lenbe[i] = (uint8_t)(bits >> (56 - 8 * i));
    sha256_update(c, lenbe, 8);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++) out[4 * i + j] = (uint8_t)(c->h[i] >> (24 - 8 * j));
}

/* ---- a minimal, strict JSON reader ---- */

typedef struct {
    const char *p, *end;
    int depth;
} reader;

enum { MAX_DEPTH = 64 };

static void skip_ws(reader *r) {
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) r->p++;
}

static int hex4(const char *p, uint32_t *v) {
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char ch = p[i];
        *v <<= 4;
        if (ch >= '0' && ch <= '9') *v |= (uint32_t)(ch - '0');
        else if (ch >= 'a' && ch <= 'f') *v |= (uint32_t)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F') *v |= (uint32_t)(ch - 'A' + 10);
        else return 0;
    }
    return 1;
}

static size_t put_utf8(char *out, uint32_t cp) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) { out[0] = (char)(0xc0 | cp >> 6); out[1] = (char)(0x80 | (cp & 0x3f)); return 2; }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | cp >> 12); out[1] = (char)(0x80 | (cp >> 6 & 0x3f)); out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | cp >> 18); out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3f)); out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

// read_string reads a JSON string at r->p. With out != NULL it decodes it
// into out (which needs room for as many bytes as the encoded string: a
// decoded string is never longer) and sets *outlen. Returns 0 on bad JSON.
static int read_string(reader *r, char *out, size_t *outlen) {
    size_t n = 0;
    if (r->p >= r->end || *r->p != '"') return 0;
    r->p++;
    while (r->p < r->end) {
        unsigned char ch = (unsigned char)*r->p++;
        if (ch == '"') {
            if (outlen) *outlen = n;
            return 1;
        }
        if (ch < 0x20) return 0;
        if (ch != '\\') {
            if (out) out[n] = (char)ch;
            n++;
            continue;
        }
        if (r->p >= r->end) return 0;
        char e = *r->p++;
        char dec;
        switch (e) {
        case '"': dec = '"'; break;
        case '\\': dec = '\\'; break;
        case '/': dec = '/'; break;
        case 'b': dec = '\b'; break;
        case 'f': dec = '\f'; break;
        case 'n': dec = '\n'; break;
        case 'r': dec = '\r'; break;
        case 't': dec = '\t'; break;
        case 'u': {
            uint32_t cp, lo;
            if (r->end - r->p < 4 || !hex4(r->p, &cp)) return 0;
            r->p += 4;
            if (cp >= 0xd800 && cp <= 0xdbff && r->end - r->p >= 6 && r->p[0] == '\\' && r->p[1] == 'u' &&
                hex4(r->p + 2, &lo) && lo >= 0xdc00 && lo <= 0xdfff) {
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                r->p += 6;
            } else if (cp >= 0xd800 && cp <= 0xdfff) {
                cp = 0xfffd; // lone surrogate: replacement character, as Go's encoding/json does
            }
            char tmp[4];
            size_t k = put_utf8(tmp, cp);
            if (out) memcpy(out + n, tmp, k);
            n += k;
            continue;
        }
        default: return 0;
        }
        if (out) out[n] = dec;
        n++;
    }
    return 0;
}

static int skip_value(reader *r);

static int skip_literal(reader *r, const char *lit) {
    size_t n = strlen(lit);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, lit, n) != 0) return 0;
    r->p += n;
    return 1;
}

static int skip_number(reader *r) {
    const char *start = r->p;
    if (r->p < r->end && *r->p == '-') r->p++;
    if (r->p >= r->end) return 0;
    if (*r->p == '0') r->p++;
    else if (*r->p >= '1' && *r->p <= '9') while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
    else return 0;
    if (r->p < r->end && *r->p == '.') {
        r->p++;
        if (r->p >= r->end || *r->p < '0' || *r->p > '9') return 0;
        while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
    }
    if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
        r->p++;
        if (r->p < r->end && (*r->p == '+' || *r->p == '-')) r->p++;
        if (r->p >= r->end || *r->p < '0' || *r->p > '9') return 0;
        while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
    }
    return r->p > start;
}

// Members of an object are visited by calling next_member until it returns
// 0 (end of object) or -1 (bad JSON); the key is decoded into key (keys
// longer than the buffer are reported as "" so that they match nothing).
static int begin_object(reader *r) {
    skip_ws(r);
    if (r->p >= r->end || *r->p != '{') return 0;
    r->p++;
    return 1;
}

static int next_member(reader *r, int *first, char *key, size_t keycap) {
    skip_ws(r);
    if (r->p < r->end && *r->p == '}') {
        r->p++;
        return 0;
    }
    if (!*first) {
        if (r->p >= r->end || *r->p != ',') return -1;
        r->p++;
        skip_ws(r);
    }
    *first = 0;
    reader probe = *r;
    size_t klen;
    if (!read_string(&probe, NULL, &klen)) return -1;
    if (klen < keycap) {
        read_string(r, key, &klen);
        key[klen] = 0;
    } else {
        r->p = probe.p;
        key[0] = 0;
    }
    skip_ws(r);
    if (r->p >= r->end || *r->p != ':') return -1;
    r->p++;
    skip_ws(r);
    return 1;
}

static int skip_value(reader *r) {
    skip_ws(r);
    if (r->p >= r->end) return 0;
    switch (*r->p) {
    case '"': return read_string(r, NULL, NULL);
    case 't': return skip_literal(r, "true");
    case 'f': return skip_literal(r, "false");
    case 'n': return skip_literal(r, "null");
    case '{': {
        if (++r->depth > MAX_DEPTH) return 0;
        char key[8];
        int first = 1, m;
        r->p++;
        while ((m = next_member(r, &first, key, sizeof key)) == 1)
            if (!skip_value(r)) return 0;
        r->depth--;
        return m == 0;
    }
    case '[': {
        if (++r->depth > MAX_DEPTH) return 0;
        r->p++;
        skip_ws(r);
        if (r->p < r->end && *r->p == ']') {
            r->p++;
            r->depth--;
            return 1;
        }
        for (;;) {
            if (!skip_value(r)) return 0;
            skip_ws(r);
            if (r->p < r->end && *r->p == ',') { r->p++; continue; }
            if (r->p < r->end && *r->p == ']') { r->p++; break; }
            return 0;
        }
        r->depth--;
        return 1;
    }
    default: return skip_number(r);
    }
}

/* ---- the tool ---- */

typedef struct {
    int abi;         // value of "abi", 0 when absent
    char method[16]; // "describe" or "call"
    char tool[136];
    char *text;      // decoded "arguments"."text", NULL when absent or not a string
    size_t text_len;
} request;

static int read_request(const char *buf, size_t n, request *q) {
    reader r = {buf, buf + n, 0};
    char key[16];
    int first = 1, m;
    memset(q, 0, sizeof *q);
    if (!begin_object(&r)) return 0;
    while ((m = next_member(&r, &first, key, sizeof key)) == 1) {
        size_t len;
        if (strcmp(key, "abi") == 0) {
            const char *start = r.p;
            if (!skip_number(&r)) return 0;
            q->abi = (r.p - start == 1 && *start >= '0' && *start <= '9') ? *start - '0' : -1;
        } else if (strcmp(key, "method") == 0 || strcmp(key, "tool") == 0) {
            char *dst = key[0] == 'm' ? q->method : q->tool;
            size_t cap = key[0] == 'm' ? sizeof q->method : sizeof q->tool;
            reader probe = r;
            if (!read_string(&probe, NULL, &len)) return 0;
            if (len < cap) {
                read_string(&r, dst, &len);
                dst[len] = 0;
            } else {
                r.p = probe.p; // too long to be a name we know: leave it ""
            }
        } else if (strcmp(key, "arguments") == 0 && r.p < r.end && *r.p == '{') {
            char akey[8];
            int afirst = 1, am;
            r.p++;
            while ((am = next_member(&r, &afirst, akey, sizeof akey)) == 1) {
                if (strcmp(akey, "text") == 0 && r.p < r.end && *r.p == '"' && q->text == NULL) {
                    reader probe = r;
                    if (!read_string(&probe, NULL, &len)) return 0;
                    q->text = malloc(len + 1);
                    if (!q->text) return 0;
                    read_string(&r, q->text, &q->text_len);
                } else if (!skip_value(&r)) {
                    return 0;
                }
            }
            if (am < 0) return 0;
        } else if (!skip_value(&r)) {
            return 0;
        }
    }
    if (m < 0) return 0;
    skip_ws(&r);
    return r.p == r.end; // nothing after the object
}

static char *read_all_stdin(size_t *n) {
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t k = fread(buf + len, 1, cap - len, stdin);
        len += k;
        if (len < cap) {
            if (ferror(stdin)) break;
            *n = len;
            return buf;
        }
        char *bigger = realloc(buf, cap * 2);
        if (!bigger) break;
        buf = bigger;
        cap *= 2;
    }
    free(buf);
    return NULL;
}

static int tool_error(const char *msg) {
    // msg is a constant without characters that need escaping in JSON.
    printf("{\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],\"isError\":true}", msg);
    return 0;
}

int main(void) {
    size_t n;
    char *buf = read_all_stdin(&n);
    if (!buf) {
        fputs("sha256: cannot read the request from stdin\n", stderr);
        return 1;
    }
    request q;
    if (!read_request(buf, n, &q)) {
        fprintf(stderr, "sha256: the request is not valid JSON: %.80s\n", buf);
        return 1;
    }
    if (q.abi != 1) {
        fprintf(stderr, "sha256: built for wasmtask ABI v1, but the request is for ABI v%d\n", q.abi);
        return 2;
    }
    if (strcmp(q.method, "describe") == 0) {
        fputs(manifest, stdout);
        return 0;
    }
    if (strcmp(q.method, "call") != 0) {
        fprintf(stderr, "sha256: unknown method \"%s\"\n", q.method);
        return 1;
    }
    if (strcmp(q.tool, "sha256") != 0) return tool_error("unknown tool: this module has only sha256");
    if (q.text == NULL) return tool_error("argument text (a string) is required");

    enum { CHUNK = 1 << 20 };
    sha256_ctx c;
    uint8_t sum[32];
    char hex[65], msg[64];
    sha256_init(&c);
    for (size_t off = 0; off < q.text_len || off == 0; off += CHUNK) {
        size_t k = q.text_len - off < CHUNK ? q.text_len - off : CHUNK;
        sha256_update(&c, (const uint8_t *)q.text + off, k);
        int m = snprintf(msg, sizeof msg, "hashed %zu of %zu bytes", off + k, q.text_len);
        wt_progress((double)(off + k), (double)q.text_len, msg, m);
        if (q.text_len == 0) break;
    }
    sha256_final(&c, sum);
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", sum[i]);
    printf("{\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],\"structuredContent\":{\"sha256\":\"%s\",\"bytes\":%zu}}",
           hex, hex, q.text_len);
    return 0;
}
