/*
 * The C worker of the stock-oversell demo (protocol: examples/demo/README.md).
 *
 *   c_worker <url> <unlocked|locked> <worker-id>
 *
 * Built by `make c-demo-worker` (target/c/c_worker) and run by the demo driver with
 * `--worker-cmd target/c/c_worker`. The lock comes from redlatch.h; the stock itself is read and
 * written with plain GET/SET over a socket. The redlatch C API has no raw Redis commands and
 * hiredis is not a dependency, so a minimal RESP client (a few dozen lines) lives below.
 */
#define _POSIX_C_SOURCE 200809L
#include <redlatch.h>

#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define STOCK_KEY "demo:stock"
#define SOLD_KEY "demo:sold"
#define READY_KEY "demo:ready"
#define GO_KEY "demo:go"
#define LOCK_NAME "demo:stock-lock"
#define LEASE_MS 5000

/* ---- minimal RESP client: one connection, one command at a time ----------------------- */

static int fd = -1;
static FILE *in;

static void die(const char *what, const char *detail) {
    fprintf(stderr, "c_worker: %s: %s\n", what, detail);
    exit(1);
}

static void connect_url(const char *url) {
    char host[256], port[16];
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    const char *at = strrchr(p, '@'); /* no auth support: the demo's Redis has none */
    if (at) p = at + 1;
    const char *colon = strrchr(p, ':');
    size_t n = colon ? strcspn(colon + 1, "/") : 0;
    if (!colon || (size_t)(colon - p) >= sizeof host || n == 0 || n >= sizeof port) die("bad url", url);
    memcpy(host, p, (size_t)(colon - p));
    host[colon - p] = '\0';
    memcpy(port, colon + 1, n);
    port[n] = '\0';
    struct addrinfo hints = {0}, *res;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0) die("cannot resolve", host);
    fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
    if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) != 0) die("cannot connect", url);
    freeaddrinfo(res);
    in = fdopen(dup(fd), "r");
    if (!in) die("fdopen", strerror(errno));
}

/* Sends a command (NULL-terminated arguments); returns the reply's first line without CRLF
 * (type byte included), reading bulk strings into `bulk`. Arrays: the last element wins. */
static char *command(char *bulk, size_t cap, ...) {
    static char line[512];
    char out[1024];
    const char *args[8];
    int argc = 0, len;
    va_list ap;
    va_start(ap, cap);
    for (const char *a; argc < 8 && (a = va_arg(ap, const char *)) != NULL;) args[argc++] = a;
    va_end(ap);
    len = snprintf(out, sizeof out, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++) {
        len += snprintf(out + len, sizeof out - (size_t)len, "$%zu\r\n%s\r\n", strlen(args[i]), args[i]);
    }
    for (int off = 0; off < len;) {
        ssize_t w = write(fd, out + off, (size_t)(len - off));
        if (w <= 0 && errno != EINTR) die("write", strerror(errno));
        if (w > 0) off += (int)w;
    }
    long items = 1;
    if (bulk) bulk[0] = '\0';
    while (items-- > 0) {
        if (!fgets(line, sizeof line, in)) die("read", "connection closed");
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '-') die("redis error", line);
        if (line[0] == '*') {
            items = atol(line + 1);
        } else if (line[0] == '$' && atol(line + 1) >= 0) {
            size_t n = (size_t)atol(line + 1);
            char tmp[512];
            if (n + 2 > sizeof tmp || fread(tmp, 1, n + 2, in) != n + 2) die("read", "bulk reply");
            if (bulk && n < cap) {
                memcpy(bulk, tmp, n);
                bulk[n] = '\0';
            }
        }
    }
    return line;
}

/* ---- the worker ------------------------------------------------------------------------ */

static unsigned long long monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void check(redlatch_status st, const char *what) {
    if (st != REDLATCH_OK) die(what, redlatch_last_error());
}

int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[2], "locked") != 0 && strcmp(argv[2], "unlocked") != 0)) {
        fprintf(stderr, "usage: c_worker <url> <unlocked|locked> <worker-id>\n");
        return 2;
    }
    const char *url = argv[1], *id = argv[3];
    int locked = strcmp(argv[2], "locked") == 0;
    redlatch_client *client = NULL;
    redlatch_lock *lock = NULL;

    connect_url(url);
    if (locked) {
        redlatch_lock_options opts = redlatch_lock_options_default(); /* waits forever */
        opts.lease_ms = LEASE_MS;
        check(redlatch_client_new(url, NULL, &client), "connect the lock client");
        check(redlatch_lock_new(client, LOCK_NAME, &opts, &lock), "make the lock");
    }

    command(NULL, 0, "INCR", READY_KEY, NULL);
    command(NULL, 0, "BLPOP", GO_KEY, "0", NULL);

    unsigned long sold = 0;
    for (unsigned long n = 1;; n++) {
        char value[64], next[32];
        if (locked) check(redlatch_lock_acquire(lock), "acquire");
        unsigned long long t0 = monotonic_ns();
        command(value, sizeof value, "GET", STOCK_KEY, NULL);
        long long stock = value[0] ? atoll(value) : 0;
        if (stock > 0) {
            struct timespec ms = {0, 1000000}; /* the race window */
            nanosleep(&ms, NULL);
            snprintf(next, sizeof next, "%lld", stock - 1);
            command(NULL, 0, "SET", STOCK_KEY, next, NULL);
            command(NULL, 0, "INCR", SOLD_KEY, NULL);
        }
        unsigned long long t1 = monotonic_ns();
        if (locked) check(redlatch_lock_release(lock), "release");
        printf("interval %llu %llu w%s#%lu\n", t0, t1, id, n);
        if (stock <= 0) break;
        sold++;
    }
    printf("done %s %lu\n", id, sold);
    fflush(stdout);
    redlatch_lock_free(lock);
    redlatch_client_free(client);
    fclose(in);
    close(fd);
    return 0;
}
