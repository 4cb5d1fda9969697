// wasmtask.h — the wasmtask_v1 host functions for modules in C (abi/ABI.md).
//
// Copy this file beside your sources and #include "wasmtask.h". It declares
// every host function of ABI 1.2 and one helper; nothing else. Declaring
// costs nothing: the linker imports only the functions a module calls, so a
// module that never calls sample or roots still loads on hosts older than
// ABI 1.2, and one that never calls elicit_all or begin_task on hosts older
// than 1.1. Each function is described in the ABI.md section named beside it.
#ifndef WASMTASK_H
#define WASMTASK_H

#include <stdlib.h>

#define WT_IMPORT(name) __attribute__((import_module("wasmtask_v1"), import_name(name)))

// Section 5: reports, logs and questions.
WT_IMPORT("progress") void wt_progress(double progress, double total, const char *msg, int msg_len);
WT_IMPORT("status")   void wt_status(const char *msg, int msg_len);
WT_IMPORT("log")      void wt_log(int level, const char *msg, int msg_len);
WT_IMPORT("elicit")   int  wt_elicit(const char *req, int req_len);
WT_IMPORT("reply")    int  wt_reply(char *buf, int buf_cap);

// Section 12 (ABI 1.1): several questions at once, and a task that begins
// after its questions.
WT_IMPORT("elicit_all") int wt_elicit_all(const char *req, int req_len);
WT_IMPORT("begin_task") int wt_begin_task(void);

// Section 14 (ABI 1.2): ask the client's model (sampling/createMessage) and
// the client's roots (roots/list). Both answer -1 where the client cannot
// be asked.
WT_IMPORT("sample") int wt_sample(const char *req, int req_len);
WT_IMPORT("roots")  int wt_roots(void);

// wt_reply_alloc fetches the pending reply, whose length n is what elicit,
// elicit_all, sample or roots returned, into a new NUL-terminated buffer
// the caller frees. NULL when n is negative (no reply: an error code), when
// memory runs out, or when the reply is not n bytes.
static inline char *wt_reply_alloc(int n) {
    if (n < 0) return NULL;
    char *buf = malloc((size_t)n + 1);
    if (!buf) return NULL;
    if (wt_reply(buf, n) != n) {
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    return buf;
}

#endif
