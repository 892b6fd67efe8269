/*
 * Small helpers for the C tests: a test runner that prints "N passed, N failed", a minimal
 * RESP client (for looking at and poking Redis directly: GET/SET/DEL/EXISTS/INFO; the redlatch
 * API has no raw commands, and hiredis is not a dependency), and timing.
 */
#ifndef REDLATCH_TESTUTIL_H
#define REDLATCH_TESTUTIL_H

#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "redlatch.h"

/* ---- runner ---------------------------------------------------------------------------- */

static int t_passed, t_failed, t_case_failed;

#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            t_case_failed = 1;                                                            \
            fprintf(stderr, "  check failed at %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                                 \
            fprintf(stderr, "\n");                                                        \
        }                                                                                 \
    } while (0)

/* Checks that `call` returns `want`; prints the status names and the last error if not. */
#define CHECK_STATUS(call, want)                                                             \
    do {                                                                                     \
        redlatch_status got_ = (call);                                                       \
        CHECK(got_ == (want), "got %s, want %s (last error: %s)", redlatch_status_name(got_), \
              redlatch_status_name(want), redlatch_last_error());                            \
    } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, REDLATCH_OK)

static uint64_t now_ms(void);

static void run_case(const char *name, void (*fn)(void)) {
    t_case_failed = 0;
    fprintf(stderr, "-- %s\n", name);
    uint64_t t0 = now_ms();
    fn();
    unsigned long long took = (unsigned long long)(now_ms() - t0);
    if (t_case_failed) {
        t_failed++;
        printf("FAIL %s (%llu ms)\n", name, took);
    } else {
        t_passed++;
        printf("ok   %s (%llu ms)\n", name, took);
    }
    fflush(stdout);
}

#define RUN(fn) run_case(#fn, fn)

static int finish(void) {
    printf("%d passed, %d failed\n", t_passed, t_failed);
    fflush(stdout);
    return t_failed == 0 ? 0 : 1;
}

/* ---- environment and time -------------------------------------------------------------- */

static const char *env_or_die(const char *name) {
    const char *v = getenv(name);
    if (v == NULL || v[0] == '\0') {
        fprintf(stderr, "%s is not set: run me through target/debug/redlatch-fleet\n", name);
        exit(2);
    }
    return v;
}

/* Time scale for slow runs (valgrind): REDLATCH_TEST_SLOW=N multiplies timing slack. */
static inline long slow_factor(void) {
    const char *v = getenv("REDLATCH_TEST_SLOW");
    long n = v ? strtol(v, NULL, 10) : 1;
    return n > 0 ? n : 1;
}

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void sleep_ms(uint64_t ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ---- minimal RESP client --------------------------------------------------------------- */

typedef struct {
    int fd;
    char buf[4096];
    size_t len, pos;
} rconn;

typedef struct {
    char type;          /* '+', '-', ':', '$', '*', or 0 on I/O error */
    int is_null;        /* nil bulk or array */
    long long integer;  /* ':' value, or element count for '*' */
    char str[8192];     /* '+', '-', '$' text (truncated); for '*', the last element's text */
} rreply;

/* Connects to "redis://host:port[/db]" (no auth). Returns 0 on success. */
static int rconn_open(rconn *c, const char *url) {
    char host[256];
    char port[16];
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    const char *colon = strrchr(p, ':');
    if (colon == NULL || (size_t)(colon - p) >= sizeof host) return -1;
    memcpy(host, p, (size_t)(colon - p));
    host[colon - p] = '\0';
    size_t n = strcspn(colon + 1, "/");
    if (n == 0 || n >= sizeof port) return -1;
    memcpy(port, colon + 1, n);
    port[n] = '\0';
    struct addrinfo hints, *res;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0) return -1;
    c->fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
    int rc = c->fd < 0 ? -1 : connect(c->fd, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    if (rc != 0) {
        if (c->fd >= 0) close(c->fd);
        return -1;
    }
    c->len = c->pos = 0;
    return 0;
}

static void rconn_close(rconn *c) {
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
}

static int r_getc(rconn *c) {
    if (c->pos == c->len) {
        ssize_t n;
        do {
            n = read(c->fd, c->buf, sizeof c->buf);
        } while (n < 0 && errno == EINTR);
        if (n <= 0) return -1;
        c->len = (size_t)n;
        c->pos = 0;
    }
    return (unsigned char)c->buf[c->pos++];
}

/* Reads one CRLF-terminated line into out (truncated to cap - 1). */
static int r_line(rconn *c, char *out, size_t cap) {
    size_t n = 0;
    int ch, prev = 0;
    while ((ch = r_getc(c)) >= 0) {
        if (prev == '\r' && ch == '\n') {
            if (n > 0) n--; /* drop the '\r' */
            out[n < cap ? n : cap - 1] = '\0';
            return 0;
        }
        if (n + 1 < cap) out[n] = (char)ch;
        n++;
        prev = ch;
    }
    return -1;
}

static int r_read(rconn *c, rreply *r) {
    char line[128];
    int type = r_getc(c);
    r->type = 0;
    r->is_null = 0;
    r->integer = 0;
    r->str[0] = '\0';
    if (type < 0) return -1;
    if (type == '+' || type == '-') {
        if (r_line(c, r->str, sizeof r->str) != 0) return -1;
    } else if (type == ':') {
        if (r_line(c, line, sizeof line) != 0) return -1;
        r->integer = strtoll(line, NULL, 10);
    } else if (type == '$') {
        if (r_line(c, line, sizeof line) != 0) return -1;
        long long len = strtoll(line, NULL, 10);
        if (len < 0) {
            r->is_null = 1;
        } else {
            for (long long i = 0; i < len + 2; i++) {
                int ch = r_getc(c);
                if (ch < 0) return -1;
                if (i < len && (size_t)i + 1 < sizeof r->str) r->str[i] = (char)ch;
            }
            r->str[(size_t)len < sizeof r->str ? (size_t)len : sizeof r->str - 1] = '\0';
        }
    } else if (type == '*') {
        if (r_line(c, line, sizeof line) != 0) return -1;
        long long count = strtoll(line, NULL, 10);
        if (count < 0) {
            r->is_null = 1;
        } else {
            for (long long i = 0; i < count; i++) {
                if (r_read(c, r) != 0) return -1;
            }
        }
        r->integer = count;
    } else {
        return -1;
    }
    r->type = (char)type;
    return 0;
}

/* Sends a command given as NULL-terminated string arguments and reads the reply. */
static int rcmd(rconn *c, rreply *r, ...) {
    char out[4096];
    const char *args[16];
    int argc = 0;
    va_list ap;
    va_start(ap, r);
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL && argc < 16) args[argc++] = a;
    va_end(ap);
    int n = snprintf(out, sizeof out, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++) {
        n += snprintf(out + n, sizeof out - (size_t)n, "$%zu\r\n%s\r\n", strlen(args[i]), args[i]);
        if ((size_t)n >= sizeof out) return -1;
    }
    for (int off = 0; off < n;) {
        ssize_t w = write(c->fd, out + off, (size_t)(n - off));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        off += (int)w;
    }
    return r_read(c, r);
}

/* One-shot helpers on a URL. */
static long long redis_int(const char *url, const char *cmd, const char *arg) {
    rconn c;
    rreply r;
    if (rconn_open(&c, url) != 0) return -1;
    long long v = (rcmd(&c, &r, cmd, arg, NULL) == 0 && r.type == ':') ? r.integer : -1;
    rconn_close(&c);
    return v;
}

static inline long long redis_dbsize(const char *url) {
    rconn c;
    rreply r;
    if (rconn_open(&c, url) != 0) return -1;
    long long v = (rcmd(&c, &r, "DBSIZE", NULL) == 0 && r.type == ':') ? r.integer : -1;
    rconn_close(&c);
    return v;
}

/* The server's pid (from INFO server), or -1. */
static inline long redis_pid(const char *url) {
    rconn c;
    rreply r;
    long pid = -1;
    if (rconn_open(&c, url) != 0) return -1;
    if (rcmd(&c, &r, "INFO", "server", NULL) == 0 && r.type == '$') {
        const char *p = strstr(r.str, "process_id:");
        if (p) pid = strtol(p + strlen("process_id:"), NULL, 10);
    }
    rconn_close(&c);
    return pid;
}

#endif /* REDLATCH_TESTUTIL_H */
