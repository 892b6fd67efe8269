/*
 * C benchmark: sequential acquire + release through the C ABI (`make c-bench`).
 *
 *   c_bench [--quick]      (run through redlatch-fleet: reads REDLATCH_TEST_URL)
 *   c_bench --pairs N      N acquire + release pairs and nothing else (for `perf stat`)
 *
 * Rows, all on one thread and one client, interleaved in short slices (round robin) so that
 * noise from the rest of the machine hits them alike:
 *   - "C lock(lease 10s)": redlatch_lock_acquire + redlatch_lock_release of a lease lock,
 *     the pair `make bench` compares with the Rust `lock` row;
 *   - "C one call (is_locked)": redlatch_lock_is_locked, one round trip through the C ABI and
 *     the blocking runtime, to split a pair into "per call" and "per round trip".
 * Latencies are per operation (CLOCK_MONOTONIC around the call), ops/s = operations / time
 * spent in them. With REDLATCH_BENCH_ROWS=<file>, each row is also appended to that file as
 * one JSON line (bench/summary.py reads them).
 *
 * With REDLATCH_BENCH_RUST_TURNS=<path of the Rust bench example> (set by `make c-bench`), the
 * Rust `lock` row takes its turn in the same round robin ("Rust lock (its turns)", served by
 * `bench --lock-turns URL`, core/examples/bench/turns.rs): the "within 1.15x of the Rust lock"
 * target then compares the two under one machine state, not against the Rust phase of
 * `make bench` minutes earlier.
 */
#define _POSIX_C_SOURCE 200809L
#include <redlatch.h>

#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

typedef struct {
    const char *name; /* row label */
    const char *key;  /* row id in the JSON rows file */
    uint64_t *ns;     /* samples (ns) */
    size_t len, cap;
    uint64_t busy_ns; /* time spent in the measured calls */
} row;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, redlatch_status st) {
    fprintf(stderr, "c_bench: %s: %s: %s\n", what, redlatch_status_name(st), redlatch_last_error());
    exit(1);
}

static void push(row *r, uint64_t ns) {
    if (r->len == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 4096;
        r->ns = realloc(r->ns, r->cap * sizeof *r->ns);
        if (r->ns == NULL) {
            fprintf(stderr, "c_bench: out of memory\n");
            exit(1);
        }
    }
    r->ns[r->len++] = ns;
}

static const struct redlatch_lock *bench_lock;

/* One acquire + release pair. */
static void op_pair(void) {
    redlatch_status st = redlatch_lock_acquire(bench_lock);
    if (st != REDLATCH_OK) die("acquire", st);
    st = redlatch_lock_release(bench_lock);
    if (st != REDLATCH_OK) die("release", st);
}

/* One round trip: is the lock held by anyone? */
static void op_is_locked(void) {
    bool locked = true;
    redlatch_status st = redlatch_lock_is_locked(bench_lock, &locked);
    if (st != REDLATCH_OK) die("is_locked", st);
    if (locked) {
        fprintf(stderr, "c_bench: the bench lock is held by someone else\n");
        exit(1);
    }
}

/* Runs `op` for about `slice_ns`; records each call when `r` is not NULL. */
static void run_for(void (*op)(void), uint64_t slice_ns, row *r) {
    uint64_t start = now_ns();
    for (;;) {
        uint64_t t0 = now_ns();
        op();
        uint64_t t1 = now_ns();
        if (r != NULL) {
            push(r, t1 - t0);
            r->busy_ns += t1 - t0;
        }
        if (t1 - start >= slice_ns) break;
    }
}

/* The Rust `lock` row's helper process: slice lengths (ms) go to its stdin, one line of
 * latencies (ns, space-separated) per slice comes back on its stdout. */
typedef struct {
    pid_t pid;
    FILE *to, *from;
} rust_turns;

static int rust_turns_start(rust_turns *t, const char *binary, const char *url) {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, in[1]);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    char *args[] = {(char *)binary, "--lock-turns", (char *)url, NULL};
    int rc = posix_spawn(&t->pid, binary, &fa, NULL, args, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(out[1]);
    if (rc != 0) return -1;
    t->to = fdopen(in[1], "w");
    t->from = fdopen(out[0], "r");
    return t->to != NULL && t->from != NULL ? 0 : -1;
}

/* One turn of `slice_ns`; appends its samples to `r` when not NULL. */
static void rust_turns_run(rust_turns *t, uint64_t slice_ns, row *r) {
    fprintf(t->to, "%llu\n", (unsigned long long)(slice_ns / 1000000u));
    fflush(t->to);
    char *line = NULL;
    size_t cap = 0;
    if (getline(&line, &cap, t->from) < 0) {
        fprintf(stderr, "c_bench: the Rust lock turns helper ended\n");
        exit(1);
    }
    for (char *p = line, *end; *p != '\0' && *p != '\n'; p = end) {
        unsigned long long ns = strtoull(p, &end, 10);
        if (end == p) break;
        if (r != NULL) {
            push(r, ns);
            r->busy_ns += ns;
        }
    }
    free(line);
}

static void rust_turns_stop(rust_turns *t) {
    fclose(t->to);
    fclose(t->from);
    waitpid(t->pid, NULL, 0);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Percentile p (0..100) in microseconds, nearest rank, of sorted samples. */
static double pct_us(const row *r, double p) {
    if (r->len == 0) return 0.0;
    size_t rank = (size_t)((p / 100.0) * (double)r->len + 0.999999);
    if (rank < 1) rank = 1;
    if (rank > r->len) rank = r->len;
    return (double)r->ns[rank - 1] / 1000.0;
}

int main(int argc, char **argv) {
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    long pairs = argc > 2 && strcmp(argv[1], "--pairs") == 0 ? strtol(argv[2], NULL, 10) : 0;
    const char *url = getenv("REDLATCH_TEST_URL");
    if (url == NULL || url[0] == '\0') {
        fprintf(stderr, "c_bench: REDLATCH_TEST_URL is not set: run me through redlatch-fleet\n");
        return 2;
    }
    uint64_t slice_ns = (quick ? 100u : 250u) * 1000000u;
    int rounds = quick ? 4 : 10;

    struct redlatch_client *client = NULL;
    redlatch_status st = redlatch_client_new(url, NULL, &client);
    if (st != REDLATCH_OK) die("connect", st);
    struct redlatch_lock_options opts = redlatch_lock_options_default();
    opts.lease_ms = 10000;
    struct redlatch_lock *lock = NULL;
    st = redlatch_lock_new(client, "bench:c:lock", &opts, &lock);
    if (st != REDLATCH_OK) die("lock", st);
    bench_lock = lock;
    if (pairs > 0) {
        uint64_t t0 = now_ns();
        for (long i = 0; i < pairs; i++) op_pair();
        printf("%ld pairs, %.1f us each\n", pairs, (double)(now_ns() - t0) / 1e3 / (double)pairs);
        redlatch_lock_free(lock);
        redlatch_client_free(client);
        return 0;
    }

    row rows[] = {
        {"C lock(lease 10s) acquire+release", "c lock", NULL, 0, 0, 0},
        {"C one call (is_locked)", "c one call", NULL, 0, 0, 0},
        {"Rust lock (its turns, turns.rs)", "rust lock (c turns)", NULL, 0, 0, 0},
    };
    void (*ops[])(void) = {op_pair, op_is_locked};
    enum { N_OPS = sizeof ops / sizeof ops[0] };
    const char *turns_binary = getenv("REDLATCH_BENCH_RUST_TURNS");
    rust_turns rust = {0, NULL, NULL};
    int with_rust = turns_binary != NULL && turns_binary[0] != '\0';
    if (with_rust && rust_turns_start(&rust, turns_binary, url) != 0) {
        fprintf(stderr, "c_bench: cannot start %s --lock-turns\n", turns_binary);
        return 1;
    }
    int n_rows = with_rust ? N_OPS + 1 : N_OPS;
    for (int i = 0; i < N_OPS; i++) run_for(ops[i], slice_ns * 2, NULL); /* warm-up */
    if (with_rust) rust_turns_run(&rust, slice_ns * 2, NULL);
    for (int round = 0; round < rounds; round++) {
        for (int i = 0; i < N_OPS; i++) run_for(ops[i], slice_ns, &rows[i]);
        if (with_rust) rust_turns_run(&rust, slice_ns, &rows[N_OPS]);
    }
    if (with_rust) rust_turns_stop(&rust);

    const char *rows_path = getenv("REDLATCH_BENCH_ROWS");
    FILE *out = rows_path && rows_path[0] ? fopen(rows_path, "a") : NULL;
    if (rows_path && rows_path[0] && out == NULL) {
        fprintf(stderr, "c_bench: cannot append to %s\n", rows_path);
        return 1;
    }
    printf("== C (redlatch %s through the C ABI, one thread, sequential; interleaved)\n",
           redlatch_version());
    printf("  %-36s %8s %8s %8s %8s\n", "operation", "ops/s", "p50 us", "p99 us", "samples");
    double p50s[N_OPS + 1] = {0};
    for (int i = 0; i < n_rows; i++) {
        row *r = &rows[i];
        qsort(r->ns, r->len, sizeof *r->ns, cmp_u64);
        p50s[i] = pct_us(r, 50);
        double ops_s = (double)r->len / ((double)r->busy_ns / 1e9);
        printf("  %-36s %8.0f %8.1f %8.1f %8zu\n", r->name, ops_s, pct_us(r, 50), pct_us(r, 99), r->len);
        if (out != NULL) {
            fprintf(out, "{\"row\": \"%s\", \"ops\": %.1f, \"p50_us\": %.2f, \"p99_us\": %.2f, \"n\": %zu}\n",
                    r->key, ops_s, pct_us(r, 50), pct_us(r, 99), r->len);
        }
        free(r->ns);
    }
    if (with_rust) printf("  C lock / Rust lock p50 (same turns): %.2fx  [target <= 1.15x]\n", p50s[0] / p50s[N_OPS]);
    if (out != NULL) {
        /* issue 15: the C ABI adds at most 15% to the Rust `lock` latency of the same run. */
        fprintf(out, "{\"target\": \"C lock p50 <= 1.15x Rust lock p50%s\", \"row\": \"c lock\", "
                     "\"ref\": \"%s\", \"metric\": \"p50_us\", \"max\": 1.15}\n",
                with_rust ? " (Rust in the same turns)" : "", with_rust ? "rust lock (c turns)" : "rust lock");
        fclose(out);
    }
    redlatch_lock_free(lock);
    redlatch_client_free(client);
    return 0;
}
