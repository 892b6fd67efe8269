/*
 * The C suite of the fair lock and the read/write lock (issue 12), run against the Redis fleet:
 *   target/debug/redlatch-fleet --quorum 3 -- ./test_fair_rw
 * Multi-process cases run this binary again as children (spawn.h): `test_fair_rw child <role>`.
 * Prints one line per case and finally "N passed, N failed"; exits 1 if any case failed.
 */
#include "spawn.h"

#include <pthread.h>

static const char *URL;
static const char *QUORUM_URLS;

static redlatch_lock *fair(redlatch_client *client, const char *name, uint64_t lease_ms,
                           uint64_t wait_ms, uint64_t owner_id) {
    redlatch_lock_options o = redlatch_lock_options_default();
    o.lease_ms = lease_ms;
    o.wait_ms = wait_ms;
    o.owner_id = owner_id;
    redlatch_lock *lock = NULL;
    CHECK_OK(redlatch_fair_lock_new(client, name, &o, &lock));
    return lock;
}

/* ---- children --------------------------------------------------------------------------- */

typedef struct {
    redlatch_lock *lock;
    int k;
    int failed;
} waiter;

static void *fair_waiter_main(void *arg) {
    waiter *w = arg;
    rconn c;
    char k[16];
    rreply r;
    snprintf(k, sizeof k, "%d", w->k);
    if (redlatch_lock_acquire(w->lock) != REDLATCH_OK) {
        fprintf(stderr, "child waiter %d: %s\n", w->k, redlatch_last_error());
        w->failed = 1;
        return NULL;
    }
    w->failed |= rconn_open(&c, URL) != 0 || rcmd(&c, &r, "RPUSH", "cf:fifo:order", k, NULL) != 0;
    rconn_close(&c);
    sleep_ms(2);
    w->failed |= redlatch_lock_release(w->lock) != REDLATCH_OK;
    return NULL;
}

/* Reads waiter numbers from stdin, one line each; each starts a thread that queues on the fair
   lock `name`, records its number in cf:fifo:order when granted, and releases. */
static int child_fair_waiters(const char *name) {
    redlatch_client *client = child_client(URL, 0);
    redlatch_lock *lock = fair(client, name, 0, 30000, 0);
    waiter w[8];
    pthread_t threads[8];
    int n = 0, failed = 0;
    char line[32];
    while (n < 8 && fgets(line, sizeof line, stdin) != NULL) {
        w[n] = (waiter){lock, atoi(line), 0};
        failed |= pthread_create(&threads[n], NULL, fair_waiter_main, &w[n]) != 0;
        n++;
    }
    for (int i = 0; i < n; i++) {
        pthread_join(threads[i], NULL);
        failed |= w[i].failed;
    }
    redlatch_lock_free(lock);
    redlatch_client_free(client);
    return failed;
}

/* Queues once on `name` with `wait_ms` and stays there (the parent kills it). */
static int child_fair_one(const char *name, const char *wait_ms) {
    redlatch_client *client = child_client(URL, 0);
    redlatch_lock *lock = fair(client, name, 0, strtoull(wait_ms, NULL, 10), 0);
    redlatch_status st = redlatch_lock_acquire(lock);
    printf("done %s\n", redlatch_status_name(st));
    return 0;
}

/* `iters` holds of `name`, one in four a write: prints "R|W start_us end_us" per hold. */
static int child_rw_worker(const char *name, const char *seed) {
    redlatch_client *client = child_client(URL, 0);
    redlatch_rw_lock *rw = NULL;
    redlatch_lock *read = NULL, *write = NULL;
    int failed = redlatch_rw_lock_new(client, name, &rw) != REDLATCH_OK ||
                 redlatch_rw_lock_read(rw, NULL, &read) != REDLATCH_OK ||
                 redlatch_rw_lock_write(rw, NULL, &write) != REDLATCH_OK;
    int s = atoi(seed);
    for (int i = 0; i < 12 && !failed; i++) {
        int is_write = (i + s) % 4 == 0;
        redlatch_lock *l = is_write ? write : read;
        if (redlatch_lock_acquire(l) != REDLATCH_OK) {
            fprintf(stderr, "child rw: %s\n", redlatch_last_error());
            failed = 1;
            break;
        }
        uint64_t start = wall_us();
        sleep_ms(is_write ? 3 : 8);
        uint64_t end = wall_us();
        printf("%c %llu %llu\n", is_write ? 'W' : 'R', (unsigned long long)start,
               (unsigned long long)end);
        failed |= redlatch_lock_release(l) != REDLATCH_OK;
    }
    printf("end\n");
    redlatch_lock_free(read);
    redlatch_lock_free(write);
    redlatch_rw_lock_free(rw);
    redlatch_client_free(client);
    return failed;
}

/* Takes a read hold of `name` (watchdog 1500 ms), says "held", and waits to be killed. */
static int child_rw_reader(const char *name) {
    redlatch_client *client = child_client(URL, 1500);
    redlatch_rw_lock *rw = NULL;
    redlatch_lock *read = NULL;
    if (redlatch_rw_lock_new(client, name, &rw) != REDLATCH_OK ||
        redlatch_rw_lock_read(rw, NULL, &read) != REDLATCH_OK ||
        redlatch_lock_acquire(read) != REDLATCH_OK) {
        printf("failed %s\n", redlatch_last_error());
        return 1;
    }
    printf("held\n");
    sleep_ms(60000);
    return 0;
}

/* ---- fair lock -------------------------------------------------------------------------- */

#define FIFO_PROCS 4
#define FIFO_WAITERS 20

static void test_fair_fifo_across_processes(void) {
    const char *name = "cf:fifo";
    rconn c;
    rreply r;
    CHECK(rconn_open(&c, URL) == 0, "connect");
    rcmd(&c, &r, "DEL", "cf:fifo:order", NULL);
    child kids[FIFO_PROCS];
    for (int i = 0; i < FIFO_PROCS; i++) kids[i] = spawn("fair-waiters", name, NULL);
    redlatch_client *client = child_client(URL, 0);
    redlatch_lock *holder = fair(client, name, 0, 0, 0);
    CHECK_OK(redlatch_lock_acquire(holder));
    /* Queue the waiters one by one, round robin over the processes: waiter k joins only once
       waiter k - 1 is in Redisson's queue, so the queue order is 0, 1, ..., 19. */
    for (int k = 0; k < FIFO_WAITERS; k++) {
        fprintf(kids[k % FIFO_PROCS].to, "%d\n", k);
        long long len = wait_llen(URL, "redisson_lock_queue:{cf:fifo}", k + 1, 5000);
        CHECK(len == k + 1, "queue length %lld after waiter %d joined", len, k);
    }
    CHECK_OK(redlatch_lock_release(holder));
    for (int i = 0; i < FIFO_PROCS; i++) {
        int rc = child_wait(&kids[i], 30000);
        CHECK(rc == 0, "child %d exited with %d", i, rc);
    }
    CHECK(rcmd(&c, &r, "LLEN", "cf:fifo:order", NULL) == 0 && r.integer == FIFO_WAITERS,
          "%lld grants recorded, want %d", r.integer, FIFO_WAITERS);
    for (int k = 0; k < FIFO_WAITERS; k++) {
        char idx[16];
        snprintf(idx, sizeof idx, "%d", k);
        rcmd(&c, &r, "LINDEX", "cf:fifo:order", idx, NULL);
        CHECK(atoi(r.str) == k, "grant %d went to waiter %s (queued %d-th)", k, r.str, k);
    }
    CHECK(redis_llen(URL, "redisson_lock_queue:{cf:fifo}") == 0, "queue not empty at the end");
    redlatch_lock_free(holder);
    redlatch_client_free(client);
    rconn_close(&c);
}

static void test_killed_fair_waiter_stalls_the_next_at_most_its_slot(void) {
    const char *name = "cf:killed";
    redlatch_client *client = child_client(URL, 0);
    /* The holder's lease runs out by itself after 1500 ms; the dead waiter's slot is what it
       saw of that lease plus its own wait (1000 ms). */
    redlatch_lock *holder = fair(client, name, 1500, 0, 1);
    redlatch_lock *next = fair(client, name, 5000, 15000, 2);
    CHECK_OK(redlatch_lock_acquire(holder));
    child dead = spawn("fair-one", name, "1000", NULL);
    CHECK(wait_llen(URL, "redisson_lock_queue:{cf:killed}", 1, 5000) == 1, "the child never queued");
    uint64_t joined = now_ms();
    child_kill(&dead);
    CHECK_OK(redlatch_lock_acquire(next));
    uint64_t took = now_ms() - joined;
    CHECK(took <= 1500 + 1000 + 2500 * (uint64_t)slow_factor(),
          "the next waiter got the lock %llu ms after the dead one queued", (unsigned long long)took);
    CHECK(redis_llen(URL, "redisson_lock_queue:{cf:killed}") == 0, "dead waiter still queued");
    CHECK_OK(redlatch_lock_release(next));
    redlatch_lock_free(holder);
    redlatch_lock_free(next);
    redlatch_client_free(client);
}

static void test_fair_lock_is_reentrant_and_try_never_queues(void) {
    redlatch_client *client = child_client(URL, 0);
    redlatch_lock *mine = fair(client, "cf:reentrant", 10000, 0, 1);
    redlatch_lock *other = fair(client, "cf:reentrant", 10000, 0, 2);
    uint64_t n = 0;
    bool got = true;
    CHECK_OK(redlatch_lock_acquire(mine));
    CHECK_OK(redlatch_lock_acquire(mine));
    CHECK_OK(redlatch_lock_hold_count(mine, &n));
    CHECK(n == 2, "hold count %llu", (unsigned long long)n);
    CHECK_OK(redlatch_lock_try_acquire(other, &got));
    CHECK(!got, "another owner got a held fair lock");
    CHECK(redis_llen(URL, "redisson_lock_queue:{cf:reentrant}") == 0, "try_acquire queued");
    CHECK_STATUS(redlatch_lock_acquire_for(other, 200), REDLATCH_NOT_ACQUIRED);
    CHECK(redis_llen(URL, "redisson_lock_queue:{cf:reentrant}") == 0, "a waiter that gave up is queued");
    CHECK_OK(redlatch_lock_release(mine));
    CHECK_OK(redlatch_lock_release(mine));
    CHECK_OK(redlatch_lock_try_acquire(other, &got));
    CHECK(got, "free fair lock not granted");
    CHECK_OK(redlatch_lock_release(other));
    redlatch_lock_free(mine);
    redlatch_lock_free(other);
    redlatch_client_free(client);
}

/* ---- read/write lock -------------------------------------------------------------------- */

#define RW_PROCS 4
#define RW_MAX 128

typedef struct {
    char mode;
    uint64_t start, end;
} interval;

static void test_readers_overlap_writers_exclude_across_processes(void) {
    child kids[RW_PROCS];
    interval log[RW_MAX];
    int n = 0;
    for (int i = 0; i < RW_PROCS; i++) {
        char seed[8];
        snprintf(seed, sizeof seed, "%d", i);
        kids[i] = spawn("rw-worker", "cf:rw", seed, NULL);
    }
    for (int i = 0; i < RW_PROCS; i++) {
        char line[128];
        while (child_line(&kids[i], line, sizeof line, 30000) == 0 && strcmp(line, "end") != 0) {
            unsigned long long a, b;
            char mode;
            if (n < RW_MAX && sscanf(line, "%c %llu %llu", &mode, &a, &b) == 3) {
                log[n++] = (interval){mode, a, b};
            }
        }
        int rc = child_wait(&kids[i], 30000);
        CHECK(rc == 0, "child %d exited with %d", i, rc);
    }
    CHECK(n == RW_PROCS * 12, "%d holds logged, want %d", n, RW_PROCS * 12);
    int reader_overlaps = 0, violations = 0;
    for (int i = 0; i < n; i++) {
        for (int j = i + 1; j < n; j++) {
            int overlap = log[i].start < log[j].end && log[j].start < log[i].end;
            if (!overlap) continue;
            if (log[i].mode == 'W' || log[j].mode == 'W') {
                violations++;
            } else {
                reader_overlaps++;
            }
        }
    }
    CHECK(violations == 0, "%d overlaps with a writer", violations);
    CHECK(reader_overlaps > 0, "readers never overlapped");
}

static void test_dead_readers_hold_expires_while_others_keep_theirs(void) {
    child reader = spawn("rw-reader", "cf:rw:dead", NULL);
    char line[128] = "";
    CHECK(child_line(&reader, line, sizeof line, 10000) == 0 && strcmp(line, "held") == 0,
          "child reader: %s", line);
    redlatch_client *client = child_client(URL, 1500);
    redlatch_rw_lock *rw = NULL;
    redlatch_lock *read = NULL, *write = NULL;
    redlatch_lock_options writer = redlatch_lock_options_default();
    writer.owner_id = 77;
    CHECK_OK(redlatch_rw_lock_new(client, "cf:rw:dead", &rw));
    CHECK_OK(redlatch_rw_lock_read(rw, NULL, &read));
    CHECK_OK(redlatch_rw_lock_write(rw, &writer, &write));
    CHECK_OK(redlatch_lock_acquire(read));
    child_kill(&reader);
    sleep_ms(2500); /* past the dead reader's 1500 ms lease; ours is renewed by the watchdog */
    bool flag = false;
    CHECK_OK(redlatch_lock_owned(read, &flag));
    CHECK(flag, "the live reader lost its hold");
    CHECK_OK(redlatch_lock_try_acquire(write, &flag));
    CHECK(!flag, "a writer got in beside a live reader");
    CHECK_OK(redlatch_lock_release(read));
    uint64_t t0 = now_ms();
    CHECK_OK(redlatch_lock_acquire_for(write, 3000));
    CHECK(now_ms() - t0 < 2000 * (uint64_t)slow_factor(), "writer waited for the dead reader");
    CHECK_OK(redlatch_lock_release(write));
    redlatch_lock_free(read);
    redlatch_lock_free(write);
    redlatch_rw_lock_free(rw);
    redlatch_client_free(client);
}

static void test_upgrade_is_refused_with_would_deadlock(void) {
    redlatch_client *client = child_client(URL, 0);
    redlatch_rw_lock *rw = NULL;
    redlatch_lock *read = NULL, *write = NULL;
    CHECK_OK(redlatch_rw_lock_new(client, "cf:rw:up", &rw));
    CHECK_OK(redlatch_rw_lock_read(rw, NULL, &read));
    CHECK_OK(redlatch_rw_lock_write(rw, NULL, &write));
    redlatch_rw_lock_free(rw); /* the sides outlive it */
    CHECK_OK(redlatch_lock_acquire(read));
    uint64_t t0 = now_ms();
    CHECK_STATUS(redlatch_lock_acquire(write), REDLATCH_WOULD_DEADLOCK);
    CHECK(now_ms() - t0 < 1000 * (uint64_t)slow_factor(), "the refusal was not at once");
    CHECK(strcmp(redlatch_status_name(REDLATCH_WOULD_DEADLOCK), "WouldDeadlock") == 0, "name");
    CHECK(REDLATCH_WOULD_DEADLOCK == 12, "code");
    bool flag = false;
    CHECK_OK(redlatch_lock_owned(read, &flag));
    CHECK(flag, "the read hold went with the refused upgrade");
    CHECK_OK(redlatch_lock_release(read));
    /* The writer may take the read lock (downgrade), and reenter both. */
    CHECK_OK(redlatch_lock_acquire(write));
    CHECK_OK(redlatch_lock_acquire(write));
    CHECK_OK(redlatch_lock_acquire(read));
    CHECK_OK(redlatch_lock_release(read));
    CHECK_OK(redlatch_lock_release(write));
    CHECK_OK(redlatch_lock_release(write));
    CHECK_OK(redlatch_lock_is_locked(write, &flag));
    CHECK(!flag, "still locked after every release");
    redlatch_lock_free(read);
    redlatch_lock_free(write);
    redlatch_client_free(client);
}

static void test_bad_input_and_quorum_refusal(void) {
    redlatch_client *client = child_client(URL, 0);
    redlatch_rw_lock *rw = NULL;
    redlatch_lock *lock = NULL;
    CHECK_STATUS(redlatch_fair_lock_new(NULL, "x", NULL, &lock), REDLATCH_INVALID_ARGUMENT);
    CHECK_STATUS(redlatch_fair_lock_new(client, "", NULL, &lock), REDLATCH_INVALID_ARGUMENT);
    CHECK_STATUS(redlatch_fair_lock_new(client, NULL, NULL, &lock), REDLATCH_INVALID_ARGUMENT);
    CHECK_STATUS(redlatch_fair_lock_new(client, "x", NULL, NULL), REDLATCH_INVALID_ARGUMENT);
    CHECK_STATUS(redlatch_rw_lock_new(client, "", &rw), REDLATCH_INVALID_ARGUMENT);
    CHECK_STATUS(redlatch_rw_lock_new(NULL, "x", &rw), REDLATCH_INVALID_ARGUMENT);
    CHECK_STATUS(redlatch_rw_lock_new(client, "x", NULL), REDLATCH_INVALID_ARGUMENT);
    CHECK_STATUS(redlatch_rw_lock_read(NULL, NULL, &lock), REDLATCH_INVALID_ARGUMENT);
    CHECK_STATUS(redlatch_rw_lock_write(NULL, NULL, &lock), REDLATCH_INVALID_ARGUMENT);
    CHECK_OK(redlatch_rw_lock_new(client, "cf:bad", &rw));
    CHECK_STATUS(redlatch_rw_lock_read(rw, NULL, NULL), REDLATCH_INVALID_ARGUMENT);
    redlatch_lock_options o = redlatch_lock_options_default();
    o.lease_ms = REDLATCH_MAX_DURATION_MS + 1;
    CHECK_STATUS(redlatch_rw_lock_write(rw, &o, &lock), REDLATCH_INVALID_ARGUMENT);
    CHECK(lock == NULL, "out written on failure");
    /* A fenced read side is refused when it is made (a C trial: it was made, and every
       acquire of it failed); the write side takes fencing tokens. */
    o = redlatch_lock_options_default();
    o.fenced = true;
    CHECK_STATUS(redlatch_rw_lock_read(rw, &o, &lock), REDLATCH_INVALID_ARGUMENT);
    CHECK(strstr(redlatch_last_error(), "read locks cannot be fenced") != NULL, "%s", redlatch_last_error());
    CHECK(lock == NULL, "out written on failure");
    CHECK_OK(redlatch_rw_lock_write(rw, &o, &lock));
    redlatch_lock_free(lock);
    lock = NULL;
    /* A fence TTL without `fenced` did nothing, silently (trials of stop 46). */
    o = redlatch_lock_options_default();
    o.fence_ttl_ms = 60000;
    CHECK_STATUS(redlatch_rw_lock_write(rw, &o, &lock), REDLATCH_INVALID_ARGUMENT);
    CHECK(strstr(redlatch_last_error(), "fenced locks only") != NULL, "%s", redlatch_last_error());
    redlatch_rw_lock_free(rw);
    redlatch_rw_lock_free(NULL);
    CHECK(redis_dbsize(URL) >= 0 && redis_int(URL, "EXISTS", "cf:bad") == 0, "bad input reached Redis");

    /* Quorum clients: fair and read/write locks are refused with the core's message. */
    const char *urls[3];
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", QUORUM_URLS);
    int count = 0;
    for (char *tok = strtok(buf, ","); tok && count < 3; tok = strtok(NULL, ",")) urls[count++] = tok;
    redlatch_client *quorum = NULL;
    CHECK_OK(redlatch_client_new_quorum(urls, (size_t)count, NULL, &quorum));
    redlatch_status st = redlatch_fair_lock_new(quorum, "cf:quorum", NULL, &lock);
    if (st == REDLATCH_OK) {
        st = redlatch_lock_acquire(lock);
        redlatch_lock_free(lock);
    }
    CHECK(st == REDLATCH_INVALID_ARGUMENT && strstr(redlatch_last_error(), "single-node") != NULL,
          "fair lock on a quorum client: %s: %s", redlatch_status_name(st), redlatch_last_error());
    redlatch_client_free(quorum);
    redlatch_client_free(client);
}

int main(int argc, char **argv) {
    URL = env_or_die("REDLATCH_TEST_URL");
    QUORUM_URLS = env_or_die("REDLATCH_TEST_QUORUM_URLS");
    if (argc >= 3 && strcmp(argv[0], "child") == 0) {
        setvbuf(stdout, NULL, _IOLBF, 0);
        if (strcmp(argv[1], "fair-waiters") == 0) return child_fair_waiters(argv[2]);
        if (strcmp(argv[1], "fair-one") == 0 && argc >= 4) return child_fair_one(argv[2], argv[3]);
        if (strcmp(argv[1], "rw-worker") == 0 && argc >= 4) return child_rw_worker(argv[2], argv[3]);
        if (strcmp(argv[1], "rw-reader") == 0) return child_rw_reader(argv[2]);
        return 3;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    RUN(test_fair_fifo_across_processes);
    RUN(test_killed_fair_waiter_stalls_the_next_at_most_its_slot);
    RUN(test_fair_lock_is_reentrant_and_try_never_queues);
    RUN(test_readers_overlap_writers_exclude_across_processes);
    RUN(test_dead_readers_hold_expires_while_others_keep_theirs);
    RUN(test_upgrade_is_refused_with_would_deadlock);
    RUN(test_bad_input_and_quorum_refusal);
    return finish();
}
