#define _GNU_SOURCE  /* pread with -std=c99 */
#include "cgstat.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUF_SIZE 65536

static const char *skip_spaces(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    return p;
}

/* Parses a decimal integer at p; returns the position after it, or NULL if none. */
static const char *parse_ll(const char *p, const char *end, long long *value) {
    int neg = 0;
    long long v = 0;
    const char *start;
    if (p < end && *p == '-') { neg = 1; p++; }
    start = p;
    while (p < end && *p >= '0' && *p <= '9') { v = v * 10 + (*p - '0'); p++; }
    if (p == start) return NULL;
    *value = neg ? -v : v;
    return p;
}

static const char *line_end(const char *p, const char *end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    return nl ? nl : end;
}

static void parse_int(const char *p, const char *end, long long *out) {
    long long v;
    p = skip_spaces(p, end);
    if (end - p >= 3 && memcmp(p, "max", 3) == 0) *out = CG_UNLIMITED;
    else if (parse_ll(p, end, &v)) *out = v;
}

static void parse_kv(const char *p, const char *end, const cg_file *f, long long *out) {
    while (p < end) {
        const char *eol = line_end(p, end);
        const char *sp = memchr(p, ' ', (size_t)(eol - p));
        if (sp) {
            size_t klen = (size_t)(sp - p);
            for (int i = 0; i < f->nkeys; i++) {
                if (strlen(f->keys[i]) == klen && memcmp(f->keys[i], p, klen) == 0) {
                    long long v;
                    if (parse_ll(skip_spaces(sp, eol), eol, &v)) out[f->slot + i] = v;
                    break;
                }
            }
        }
        p = eol + 1;
    }
}

/* Whether the line at p (up to eol) is of a disk in f->keys: its first word is one. */
static int skipped_disk(const char *p, const char *eol, const cg_file *f) {
    const char *sp = memchr(p, ' ', (size_t)(eol - p));
    size_t len = (size_t)((sp ? sp : eol) - p);
    for (int i = 0; i < f->nkeys; i++)
        if (strlen(f->keys[i]) == len && memcmp(f->keys[i], p, len) == 0) return 1;
    return 0;
}

/* io.stat: "8:0 rbytes=1 wbytes=2 rios=3 ..." per device. */
static void parse_iostat(const char *p, const char *end, const cg_file *f, long long *out) {
    long long r = 0, w = 0;
    while (p < end) {
        const char *eol = line_end(p, end);
        const char *q = skipped_disk(p, eol, f) ? eol : p;
        while (q < eol) {
            const char *tok_end = memchr(q, ' ', (size_t)(eol - q));
            if (!tok_end) tok_end = eol;
            long long v;
            if (tok_end - q > 7 && memcmp(q, "rbytes=", 7) == 0 && parse_ll(q + 7, tok_end, &v))
                r += v;
            else if (tok_end - q > 7 && memcmp(q, "wbytes=", 7) == 0 &&
                     parse_ll(q + 7, tok_end, &v))
                w += v;
            q = tok_end + 1;
        }
        p = eol + 1;
    }
    out[f->slot] = r;
    out[f->slot + 1] = w;
}

/* blkio.*io_service_bytes*: "8:0 Read 4096" per device and op, then "Total N". */
static void parse_blkio(const char *p, const char *end, const cg_file *f, long long *out) {
    long long r = 0, w = 0;
    while (p < end) {
        const char *eol = line_end(p, end);
        const char *sp1 = memchr(p, ' ', (size_t)(eol - p));
        if (sp1 && !skipped_disk(p, eol, f)) {
            const char *op = sp1 + 1;
            const char *sp2 = memchr(op, ' ', (size_t)(eol - op));
            long long v;
            if (sp2 && parse_ll(sp2 + 1, eol, &v)) {
                if (sp2 - op == 4 && memcmp(op, "Read", 4) == 0) r += v;
                else if (sp2 - op == 5 && memcmp(op, "Write", 5) == 0) w += v;
            }
        }
        p = eol + 1;
    }
    out[f->slot] = r;
    out[f->slot + 1] = w;
}

/* memory.pressure (PSI): "some avg10=0.00 avg60=0.00 avg300=0.00 total=N", then "full ...". */
static void parse_psi(const char *p, const char *end, const cg_file *f, long long *out) {
    while (p < end) {
        const char *eol = line_end(p, end);
        int which = (eol - p > 5 && memcmp(p, "some ", 5) == 0)   ? 0
                    : (eol - p > 5 && memcmp(p, "full ", 5) == 0) ? 1
                                                                  : -1;
        const char *q = p;
        while (which >= 0 && q < eol) {
            const char *tok_end = memchr(q, ' ', (size_t)(eol - q));
            if (!tok_end) tok_end = eol;
            long long v;
            if (tok_end - q > 6 && memcmp(q, "total=", 6) == 0 && parse_ll(q + 6, tok_end, &v))
                out[f->slot + which] = v;
            q = tok_end + 1;
        }
        p = eol + 1;
    }
}

int cg_read(const cg_file *files, int nfiles, long long *out, int nout) {
    char buf[BUF_SIZE];
    int rc = 0;
    for (int i = 0; i < nout; i++) out[i] = CG_MISSING;
    for (int i = 0; i < nfiles; i++) {
        const cg_file *f = &files[i];
        ssize_t n = pread(f->fd, buf, sizeof buf, 0);
        if (n < 0) {
            if (rc == 0) rc = -errno;
            continue;
        }
        const char *end = buf + n;
        switch (f->kind) {
        case CG_INT: parse_int(buf, end, &out[f->slot]); break;
        case CG_KV: parse_kv(buf, end, f, out); break;
        case CG_IOSTAT: parse_iostat(buf, end, f, out); break;
        case CG_BLKIO: parse_blkio(buf, end, f, out); break;
        case CG_PSI: parse_psi(buf, end, f, out); break;
        default: break;
        }
    }
    return rc;
}

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Sleeps until deadline_ns unless stop_fd becomes readable first (returns 1 then). */
static int wait_until(long long deadline_ns, int stop_fd) {
    struct pollfd p = {.fd = stop_fd, .events = POLLIN};
    for (;;) {
        long long left = deadline_ns - now_ns();
        if (left <= 0) return 0;
        struct timespec ts = {.tv_sec = left / 1000000000LL, .tv_nsec = left % 1000000000LL};
        int r = ppoll(&p, 1, &ts, NULL);
        if (r > 0) return 1;
        if (r == 0) return 0;
        if (errno != EINTR) return 0;
    }
}

int cg_sample(const cg_file *files, int nfiles, int nout, long long interval_ns,
              long long *due_ns, long long until_ns, int stop_fd, long long *times,
              long long *rows, int max_rows, long long *missed, int *stopped) {
    int n = 0;
    *stopped = 0;
    while (n < max_rows) {
        if (*due_ns > until_ns) {
            /* Hand the rows to Python in time, but still wake at once on a stop. */
            if (wait_until(until_ns, stop_fd)) *stopped = 1;
            return n;
        }
        if (wait_until(*due_ns, stop_fd)) {
            *stopped = 1;
            return n;
        }
        long long t0 = now_ns();
        int rc = cg_read(files, nfiles, rows + (long long)n * nout, nout);
        times[n] = (t0 + now_ns()) / 2;
        n++;
        if (rc < 0) return rc;
        *due_ns += interval_ns;
        long long now = now_ns();
        if (now > *due_ns) { /* fell behind: skip the missed ticks, stay on the grid */
            long long skipped = (now - *due_ns) / interval_ns + 1;
            *missed += skipped;
            *due_ns += skipped * interval_ns;
        }
        /* The next sample is past the hand-over: hand the rows over now rather than wake
         * once more only to return (at 10 Hz that was every other wake-up, each ~50 us of
         * CPU on our VMs). */
        if (*due_ns > until_ns) return n;
    }
    return n;
}
