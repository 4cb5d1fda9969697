// extism_sha256 — an Extism plugin doing the work of examples/c/sha256.c's
// call: read the input (the tool's arguments, {"text": "..."}), decode the
// JSON string, hash it with SHA-256, and answer the same CallToolResult JSON
// (hex digest as text and structured content). It talks to the host through
// the Extism kernel's imports ("extism:host/env": input_length,
// input_load_u8/u64, alloc, store_u8/u64, output_set), each declared here
// from the kernel's documented signatures.
//
// Build: clang --target=wasm32-wasi --sysroot=/usr -O2 -nodefaultlibs -mexec-model=reactor \
//          -Wl,--export=sha256 -Wl,--strip-debug -o extism_sha256.wasm extism_sha256.c -lc
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXTISM(name) __attribute__((import_module("extism:host/env"), import_name(#name)))
EXTISM(input_length) uint64_t extism_input_length(void);
EXTISM(input_load_u8) uint32_t extism_input_load_u8(uint64_t off);
EXTISM(input_load_u64) uint64_t extism_input_load_u64(uint64_t off);
EXTISM(alloc) uint64_t extism_alloc(uint64_t n);
EXTISM(store_u8) void extism_store_u8(uint64_t off, uint32_t v);
EXTISM(store_u64) void extism_store_u64(uint64_t off, uint64_t v);
EXTISM(output_set) void extism_output_set(uint64_t off, uint64_t n);

/* ---- SHA-256 (FIPS 180-4) ---- */

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

static uint32_t rotr(uint32_t x, int n) { return x >> n | x << (32 - n); }

static void compress(uint32_t h[8], const uint8_t blk[64]) {
    uint32_t w[64], v[8];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)blk[4 * i] << 24 | (uint32_t)blk[4 * i + 1] << 16 | (uint32_t)blk[4 * i + 2] << 8 | blk[4 * i + 3];
    for (int i = 16; i < 64; i++)
        w[i] = w[i - 16] + (rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ w[i - 15] >> 3) + w[i - 7] +
               (rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ w[i - 2] >> 10);
    memcpy(v, h, sizeof v);
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = v[7] + (rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25)) + ((v[4] & v[5]) ^ (~v[4] & v[6])) + K[i] + w[i];
        uint32_t t2 = (rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22)) + ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
        memmove(v + 1, v, 7 * sizeof v[0]);
        v[4] += t1;
        v[0] = t1 + t2;
    }
    for (int i = 0; i < 8; i++) h[i] += v[i];
}

static void sha256(const uint8_t *p, size_t n, uint8_t out[32]) {
    uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    uint8_t tail[128] = {0};
    size_t full = n / 64 * 64, rest = n - full, tlen = rest < 56 ? 64 : 128;
    for (size_t off = 0; off < full; off += 64) compress(h, p + off);
    memcpy(tail, p + full, rest);
    tail[rest] = 0x80;
    uint64_t bits = (uint64_t)n * 8;
    for (int i = 0; i < 8; i++) tail[tlen - 1 - i] = (uint8_t)(bits >> (8 * i));
    for (size_t off = 0; off < tlen; off += 64) compress(h, tail + off);
    for (int i = 0; i < 32; i++) out[i] = (uint8_t)(h[i / 4] >> (24 - 8 * (i % 4)));
}

/* ---- the input: {"text": "<JSON string>"} ---- */

static const char *ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// str decodes the JSON string at *pp into out (room for as many bytes as
// the encoded string) and returns its length, or -1 on bad JSON. \u escapes
// outside the BMP's ASCII range are written as UTF-8 of the code unit.
static long str(const char **pp, const char *end, char *out) {
    const char *p = *pp;
    long n = 0;
    if (p >= end || *p++ != '"') return -1;
    while (p < end && *p != '"') {
        char c = *p++;
        if (c != '\\') {
            if (out) out[n] = c;
            n++;
            continue;
        }
        if (p >= end) return -1;
        c = *p++;
        switch (c) {
        case 'n': c = '\n'; break;
        case 't': c = '\t'; break;
        case 'r': c = '\r'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case '"': case '\\': case '/': break;
        case 'u': {
            unsigned cp = 0;
            for (int i = 0; i < 4; i++) {
                int v = p + i < end ? hexval(p[i]) : -1;
                if (v < 0) return -1;
                cp = cp << 4 | (unsigned)v;
            }
            p += 4;
            if (cp >= 0x80) { // two or three UTF-8 bytes
                char u[3];
                int k = 0;
                if (cp < 0x800) u[k++] = (char)(0xc0 | cp >> 6);
                else u[k++] = (char)(0xe0 | cp >> 12), u[k++] = (char)(0x80 | (cp >> 6 & 0x3f));
                u[k++] = (char)(0x80 | (cp & 0x3f));
                for (int i = 0; i < k; i++) {
                    if (out) out[n] = u[i];
                    n++;
                }
                continue;
            }
            c = (char)cp;
            break;
        }
        default: return -1;
        }
        if (out) out[n] = c;
        n++;
    }
    if (p >= end) return -1;
    *pp = p + 1;
    return n;
}

static void output(const char *s, size_t n) {
    uint64_t off = extism_alloc(n);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, s + i, 8);
        extism_store_u64(off + i, v);
    }
    for (; i < n; i++) extism_store_u8(off + i, (uint8_t)s[i]);
    extism_output_set(off, n);
}

static int fail(const char *msg) {
    char buf[160];
    int n = snprintf(buf, sizeof buf, "{\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],\"isError\":true}", msg);
    output(buf, (size_t)n);
    return 0;
}

__attribute__((export_name("sha256"))) int sha256_call(void) {
    uint64_t n = extism_input_length(), i = 0;
    char *in = malloc(n + 1);
    if (!in) return 1;
    for (; i + 8 <= n; i += 8) {
        uint64_t v = extism_input_load_u64(i);
        memcpy(in + i, &v, 8);
    }
    for (; i < n; i++) in[i] = (char)extism_input_load_u8(i);
    const char *p = ws(in, in + n), *end = in + n;
    char *text = NULL;
    long tlen = -1;
    if (p >= end || *p++ != '{') goto bad;
    for (;;) {
        char key[8];
        p = ws(p, end);
        const char *probe = p;
        long klen = str(&probe, end, NULL);
        if (klen < 0) goto bad;
        if (klen < (long)sizeof key) str(&p, end, key), key[klen] = 0;
        else p = probe, key[0] = 0;
        p = ws(p, end);
        if (p >= end || *p++ != ':') goto bad;
        p = ws(p, end);
        if (strcmp(key, "text") != 0 || text != NULL) goto bad; // the only argument
        probe = p;
        tlen = str(&probe, end, NULL);
        if (tlen < 0 || !(text = malloc((size_t)tlen + 1))) goto bad;
        str(&p, end, text);
        p = ws(p, end);
        if (p < end && *p == ',') { p++; continue; }
        if (p < end && *p == '}') break;
        goto bad;
    }
    if (text == NULL) {
        free(in);
        return fail("argument text (a string) is required");
    }
    uint8_t sum[32];
    char hex[65], res[256];
    sha256((const uint8_t *)text, (size_t)tlen, sum);
    for (int k = 0; k < 32; k++) snprintf(hex + 2 * k, 3, "%02x", sum[k]);
    int rn = snprintf(res, sizeof res, "{\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],\"structuredContent\":{\"sha256\":\"%s\",\"bytes\":%ld}}",
                      hex, hex, tlen);
    output(res, (size_t)rn);
    free(text);
    free(in);
    return 0;
bad:
    free(text);
    free(in);
    return fail("the input is not {\\\"text\\\": string}");
}
