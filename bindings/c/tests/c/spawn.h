/*
 * Child processes for the multi-process tests of the family suites: each child is this test
 * binary again (fork, then exec of the path /proc/self/exe names, with a role in argv), so it
 * starts with no inherited redlatch state whatever the parent holds. The path is read with
 * readlink rather than exec'ing /proc/self/exe itself: under valgrind that link is valgrind's
 * own tool binary (only readlink is redirected to the program), so the children would not
 * start. The parent talks to a child through two pipes: lines to its stdin, lines from its
 * stdout.
 */
#ifndef REDLATCH_SPAWN_H
#define REDLATCH_SPAWN_H

#include "testutil.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

typedef struct {
    pid_t pid;
    FILE *to;      /* the child's stdin */
    int from;      /* the child's stdout */
    char buf[1024]; /* what was read from it and not yet returned as lines */
    size_t len;
} child;

/* Starts `<this program> role args...` (NULL-terminated). pid is -1 on failure. */
static inline child spawn(const char *role, ...) {
    child c;
    memset(&c, 0, sizeof c);
    c.pid = -1;
    c.from = -1;
    const char *argv[16];
    int argc = 0;
    argv[argc++] = "child";
    argv[argc++] = role;
    va_list ap;
    va_start(ap, role);
    const char *a;
    while ((a = va_arg(ap, const char *)) != NULL && argc < 15) argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return c;
    self[n] = '\0';
    int in[2], out[2];
    if (pipe(in) != 0) return c;
    if (pipe(out) != 0) {
        close(in[0]);
        close(in[1]);
        return c;
    }
    /* The parent's ends must not leak into later children (a child sees EOF on its stdin
       only when every copy of the write end is closed). */
    fcntl(in[1], F_SETFD, FD_CLOEXEC);
    fcntl(out[0], F_SETFD, FD_CLOEXEC);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        execv(self, (char *const *)argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    if (pid < 0) {
        close(in[1]);
        close(out[0]);
        return c;
    }
    c.pid = pid;
    c.to = fdopen(in[1], "w");
    c.from = out[0];
    setvbuf(c.to, NULL, _IOLBF, 0);
    return c;
}

/* Reads one line from the child into buf (without the newline), waiting at most `ms`.
   Returns 0 on success, -1 on timeout or end of file. */
static inline int child_line(child *c, char *buf, size_t cap, uint64_t ms) {
    uint64_t until = now_ms() + ms;
    for (;;) {
        char *nl = memchr(c->buf, '\n', c->len);
        if (nl != NULL) {
            size_t n = (size_t)(nl - c->buf);
            size_t keep = n < cap ? n : cap - 1;
            memcpy(buf, c->buf, keep);
            buf[keep] = '\0';
            memmove(c->buf, nl + 1, c->len - n - 1);
            c->len -= n + 1;
            return 0;
        }
        uint64_t now = now_ms();
        if (now >= until || c->len == sizeof c->buf) return -1;
        struct pollfd p = {c->from, POLLIN, 0};
        if (poll(&p, 1, (int)(until - now)) <= 0) return -1;
        ssize_t got = read(c->from, c->buf + c->len, sizeof c->buf - c->len);
        if (got <= 0) return -1;
        c->len += (size_t)got;
    }
}

/* Waits for the child to exit, at most `ms` (then kills it). Returns its exit status (0..255),
   or -1 when it was killed or did not exit in time. Closes the pipes. */
static inline int child_wait(child *c, uint64_t ms) {
    if (c->to) fclose(c->to);
    c->to = NULL;
    int status = 0;
    uint64_t until = now_ms() + ms;
    pid_t got = 0;
    while ((got = waitpid(c->pid, &status, WNOHANG)) == 0 && now_ms() < until) sleep_ms(10);
    if (got == 0) {
        fprintf(stderr, "  child %d did not exit within %llu ms: killed\n", (int)c->pid,
                (unsigned long long)ms);
        kill(c->pid, SIGKILL);
        waitpid(c->pid, &status, 0);
    }
    if (c->from >= 0) close(c->from);
    c->from = -1;
    return (got > 0 && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
}

/* Kills the child (SIGKILL: no clean-up of any kind runs) and reaps it. */
static inline void child_kill(child *c) {
    kill(c->pid, SIGKILL);
    (void)child_wait(c, 5000);
}

/* LLEN of `key`, or -1. */
static inline long long redis_llen(const char *url, const char *key) { return redis_int(url, "LLEN", key); }

/* Polls `LLEN key` until it is at least `want`, at most `ms`. Returns the last length seen. */
static inline long long wait_llen(const char *url, const char *key, long long want, uint64_t ms) {
    uint64_t until = now_ms() + ms;
    long long n = redis_llen(url, key);
    while (n < want && now_ms() < until) {
        sleep_ms(5);
        n = redis_llen(url, key);
    }
    return n;
}

/* Wall-clock microseconds: comparable between processes on one machine. */
static inline uint64_t wall_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Connects to URL or exits the child with status 2. */
static inline redlatch_client *child_client(const char *url, uint64_t watchdog_ms) {
    redlatch_client_options o = {0};
    o.watchdog_timeout_ms = watchdog_ms;
    redlatch_client *client = NULL;
    if (redlatch_client_new(url, &o, &client) != REDLATCH_OK) {
        fprintf(stderr, "child: connect: %s\n", redlatch_last_error());
        exit(2);
    }
    return client;
}

#endif /* REDLATCH_SPAWN_H */
