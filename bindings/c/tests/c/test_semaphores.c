/*
 * The C suite of the semaphore, the permit-expirable semaphore, the count-down latch and the
 * multi-lock (issue 13), run against the Redis fleet:
 *   target/debug/redlatch-fleet --quorum 3 -- ./test_semaphores
 * Multi-process cases run this binary again as children (spawn.h): `test_semaphores child <role>`.
 * Prints one line per case and finally "N passed, N failed"; exits 1 if any case failed.
 */
#include "spawn.h"

#include <pthread.h>

static const char *URL;

static int starts_with(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* ---- children --------------------------------------------------------------------------- */

#define SEM_PERMITS 3

typedef struct {
    redlatch_semaphore *sem;
    int failed;
} sem_job;

/* 8 rounds: take a permit, INCR the holder count (its reply is the sample), hold, DECR, give
   it back. Fails when a sample is above SEM_PERMITS. */
static void *sem_holder_main(void *arg) {
    sem_job *job = arg;
    rconn c;
    rreply r;
    if (rconn_open(&c, URL) != 0) {
        job->failed = 1;
        return NULL;
    }
    for (int i = 0; i < 8 && !job->failed; i++) {
        if (redlatch_semaphore_acquire(job->sem, 1) != REDLATCH_OK) {
            fprintf(stderr, "child semaphore: %s\n", redlatch_last_error());
            job->failed = 1;
            break;
        }
        if (rcmd(&c, &r, "INCR", "cs:sem:holders", NULL) != 0 || r.integer > SEM_PERMITS) {
            fprintf(stderr, "child semaphore: %lld holders at once\n", r.integer);
            job->failed = 1;
        }
        sleep_ms(3);
        job->failed |= rcmd(&c, &r, "DECR", "cs:sem:holders", NULL) != 0;
        job->failed |= redlatch_semaphore_release(job->sem, 1) != REDLATCH_OK;
    }
    rconn_close(&c);
    return NULL;
}

static int child_sem_holders(void) {
    redlatch_client *client = child_client(URL, 0);
    redlatch_semaphore *sem = NULL;
    if (redlatch_semaphore_new(client, "cs:sem", 20000, &sem) != REDLATCH_OK) return 1;
    sem_job jobs[2] = {{sem, 0}, {sem, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, sem_holder_main, &jobs[i]);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    redlatch_semaphore_free(sem);
    redlatch_client_free(client);
    return jobs[0].failed || jobs[1].failed;
}

/* Takes one permit of the permit semaphore cs:permits without a fixed lease (watchdog 1000
   ms), says "held <id>", and waits to be killed. */
static int child_permit_holder(void) {
    redlatch_client *client = child_client(URL, 1000);
    redlatch_permit_semaphore *sem = NULL;
    redlatch_permit *permit = NULL;
    if (redlatch_permit_semaphore_new(client, "cs:permits", 5000, &sem) != REDLATCH_OK ||
        redlatch_permit_semaphore_acquire(sem, 0, &permit) != REDLATCH_OK) {
        printf("failed %s\n", redlatch_last_error());
        return 1;
    }
    printf("held %s\n", redlatch_permit_id(permit));
    sleep_ms(60000);
    return 0;
}

/* 10 rounds of a multi-lock on two names (given in the order of argv), each a non-atomic
   read-increment-write of both counters. */
static int child_multi(const char *first, const char *second) {
    redlatch_client *client = child_client(URL, 0);
    const char *names[2] = {first, second};
    redlatch_lock_options o = redlatch_lock_options_default();
    o.lease_ms = 10000;
    redlatch_multi_lock *multi = NULL;
    int failed = redlatch_multi_lock_new_names(client, names, 2, &o, &multi) != REDLATCH_OK;
    rconn c;
    failed |= rconn_open(&c, URL) != 0;
    for (int i = 0; i < 10 && !failed; i++) {
        if (redlatch_multi_lock_acquire(multi) != REDLATCH_OK) {
            fprintf(stderr, "child multi: %s\n", redlatch_last_error());
            failed = 1;
            break;
        }
        for (int k = 0; k < 2; k++) {
            char key[64], next[32];
            rreply r;
            snprintf(key, sizeof key, "%s:counter", names[k]);
            failed |= rcmd(&c, &r, "GET", key, NULL) != 0;
            long long v = r.is_null ? 0 : strtoll(r.str, NULL, 10);
            sleep_ms(1);
            snprintf(next, sizeof next, "%lld", v + 1);
            failed |= rcmd(&c, &r, "SET", key, next, NULL) != 0;
        }
        failed |= redlatch_multi_lock_release(multi) != REDLATCH_OK;
    }
    rconn_close(&c);
    redlatch_multi_lock_free(multi);
    redlatch_client_free(client);
    return failed;
}

/* Says "waiting", then waits up to 10 s for the latch cs:latch: prints "open <ms>" with how
   long after the parent's "go" line it woke. */
static int child_latch_waiter(void) {
    redlatch_client *client = child_client(URL, 0);
    redlatch_count_down_latch *latch = NULL;
    if (redlatch_count_down_latch_new(client, "cs:latch", &latch) != REDLATCH_OK) return 1;
    printf("waiting\n");
    bool reached = false;
    redlatch_status st = redlatch_count_down_latch_wait(latch, 10000, &reached);
    uint64_t woke = wall_us();
    printf("%s %llu\n", st == REDLATCH_OK && reached ? "open" : "closed", (unsigned long long)woke);
    redlatch_count_down_latch_free(latch);
    redlatch_client_free(client);
    return 0;
}

/* ---- semaphore -------------------------------------------------------------------------- */

#define SEM_PROCS 4

static void test_at_most_permits_holders_across_processes(void) {
    rconn c;
    rreply r;
    CHECK(rconn_open(&c, URL) == 0, "connect");
    rcmd(&c, &r, "DEL", "cs:sem", "cs:sem:holders", NULL);
    redlatch_client *client = child_client(URL, 0);
    redlatch_semaphore *sem = NULL;
    bool set = false;
    CHECK_OK(redlatch_semaphore_new(client, "cs:sem", 0, &sem));
    CHECK_OK(redlatch_semaphore_try_set_permits(sem, SEM_PERMITS, &set));
    CHECK(set, "permits not set");
    CHECK_OK(redlatch_semaphore_try_set_permits(sem, 10, &set));
    CHECK(!set, "permits set twice");
    child kids[SEM_PROCS];
    for (int i = 0; i < SEM_PROCS; i++) kids[i] = spawn("sem-holders", NULL);
    for (int i = 0; i < SEM_PROCS; i++) {
        int rc = child_wait(&kids[i], 60000);
        CHECK(rc == 0, "child %d exited with %d (more than %d holders, or an error)", i, rc, SEM_PERMITS);
    }
    uint64_t available = 0;
    CHECK_OK(redlatch_semaphore_available(sem, &available));
    CHECK(available == SEM_PERMITS, "%llu permits available at the end", (unsigned long long)available);
    redlatch_semaphore_free(sem);
    redlatch_client_free(client);
    rconn_close(&c);
}

static void test_semaphore_counts_what_the_handle_holds(void) {
    redlatch_client *client = child_client(URL, 0);
    redlatch_semaphore *sem = NULL, *other = NULL;
    uint64_t n = 0;
    bool got = false;
    redis_int(URL, "DEL", "cs:count");
    CHECK_OK(redlatch_semaphore_new(client, "cs:count", 0, &sem));
    CHECK_OK(redlatch_semaphore_new(client, "cs:count", 0, &other));
    CHECK_OK(redlatch_semaphore_try_set_permits(sem, 2, &got));
    CHECK_OK(redlatch_semaphore_acquire(sem, 2));
    CHECK_OK(redlatch_semaphore_held(sem, &n));
    CHECK(n == 2, "held %llu", (unsigned long long)n);
    CHECK_OK(redlatch_semaphore_try_acquire(other, 1, &got));
    CHECK(!got, "a third permit of two");
    CHECK_STATUS(redlatch_semaphore_acquire(other, 1), REDLATCH_NOT_ACQUIRED);
    uint64_t t0 = now_ms();
    CHECK_STATUS(redlatch_semaphore_acquire_for(other, 1, 300), REDLATCH_NOT_ACQUIRED);
    uint64_t took = now_ms() - t0;
    CHECK(took >= 290 && took < 2000 * (uint64_t)slow_factor(), "a 300 ms wait took %llu ms",
          (unsigned long long)took);
    CHECK_STATUS(redlatch_semaphore_release(other, 1), REDLATCH_NOT_OWNED);
    CHECK(redlatch_last_error_reason() == REDLATCH_REASON_NEVER_HELD, "reason");
    CHECK_STATUS(redlatch_semaphore_release(sem, 3), REDLATCH_NOT_OWNED);
    CHECK_OK(redlatch_semaphore_available(sem, &n));
    CHECK(n == 0, "a refused release changed the count (%llu)", (unsigned long long)n);
    CHECK_OK(redlatch_semaphore_release(sem, 1));
    /* Freeing the handle gives back what it still holds. */
    redlatch_semaphore_free(sem);
    CHECK_OK(redlatch_semaphore_available(other, &n));
    CHECK(n == 2, "free did not give the permit back (%llu available)", (unsigned long long)n);
    redlatch_semaphore_free(other);
    redlatch_client_free(client);
}

static void test_initial_permits_are_set_by_the_first_call(void) {
    redlatch_client *client = child_client(URL, 0);
    redlatch_semaphore *sem = NULL, *other = NULL;
    redlatch_permit_semaphore *ps = NULL;
    redlatch_permit *permit = NULL;
    uint64_t n = 0;
    bool got = false;
    redis_int(URL, "DEL", "cs:initial");
    CHECK_OK(redlatch_semaphore_new(client, "cs:initial", 0, &sem));
    CHECK_STATUS(redlatch_semaphore_set_initial_permits(sem, 0), REDLATCH_INVALID_ARGUMENT);
    CHECK_STATUS(redlatch_semaphore_set_initial_permits(sem, 1ull << 31), REDLATCH_INVALID_ARGUMENT);
    CHECK_STATUS(redlatch_semaphore_set_initial_permits(NULL, 1), REDLATCH_INVALID_ARGUMENT);
    CHECK(redis_int(URL, "EXISTS", "cs:initial") == 0, "set before the first call");
    CHECK_OK(redlatch_semaphore_set_initial_permits(sem, 3));
    CHECK_OK(redlatch_semaphore_acquire(sem, 2));
    CHECK_OK(redlatch_semaphore_available(sem, &n));
    CHECK(n == 1, "%llu available of 3 after taking 2", (unsigned long long)n);
    /* A count that exists is left as it is. */
    CHECK_OK(redlatch_semaphore_new(client, "cs:initial", 0, &other));
    CHECK_OK(redlatch_semaphore_set_initial_permits(other, 5));
    CHECK_OK(redlatch_semaphore_try_acquire(other, 2, &got));
    CHECK(!got, "a declared count replaced the one in Redis");
    CHECK_OK(redlatch_semaphore_release(sem, 2));
    redis_int(URL, "DEL", "cs:initial-permits");
    CHECK_OK(redlatch_permit_semaphore_new(client, "cs:initial-permits", 0, &ps));
    CHECK_STATUS(redlatch_permit_semaphore_set_initial_permits(ps, 0), REDLATCH_INVALID_ARGUMENT);
    CHECK_OK(redlatch_permit_semaphore_set_initial_permits(ps, 1));
    CHECK_OK(redlatch_permit_semaphore_acquire(ps, 30000, &permit));
    CHECK_OK(redlatch_permit_semaphore_available(ps, &n));
    CHECK(n == 0, "%llu available of 1 after taking it", (unsigned long long)n);
    redlatch_permit_free(permit);
    redlatch_permit_semaphore_free(ps);
    redlatch_semaphore_free(other);
    redlatch_semaphore_free(sem);
    redlatch_client_free(client);
}

/* ---- permit-expirable semaphore --------------------------------------------------------- */

static void test_no_permit_leaked_after_holders_are_killed(void) {
    redis_int(URL, "DEL", "cs:permits");
    redlatch_client *client = child_client(URL, 0);
    redlatch_permit_semaphore *sem = NULL;
    bool set = false;
    CHECK_OK(redlatch_permit_semaphore_new(client, "cs:permits", 0, &sem));
    CHECK_OK(redlatch_permit_semaphore_try_set_permits(sem, 2, &set));
    child kids[2];
    for (int i = 0; i < 2; i++) {
        char line[128] = "";
        kids[i] = spawn("permit-holder", NULL);
        CHECK(child_line(&kids[i], line, sizeof line, 10000) == 0 && starts_with(line, "held "),
              "child %d: %s", i, line);
        CHECK(strlen(line) == 5 + 32, "permit id %s", line + 5);
    }
    redlatch_permit *p = NULL;
    CHECK_OK(redlatch_permit_semaphore_try_acquire(sem, 0, &p));
    CHECK(p == NULL, "a third permit of two");
    CHECK_STATUS(redlatch_permit_semaphore_acquire_for(sem, 0, 200, &p), REDLATCH_NOT_ACQUIRED);
    CHECK(p == NULL, "out written on failure");
    for (int i = 0; i < 2; i++) child_kill(&kids[i]);
    /* Their permits had no fixed lease: they come back one watchdog timeout (1000 ms) after
       the last renewal. */
    redlatch_permit_semaphore_free(sem);
    CHECK_OK(redlatch_permit_semaphore_new(client, "cs:permits", 5000 * (uint64_t)slow_factor(), &sem));
    redlatch_permit *a = NULL, *b = NULL;
    CHECK_OK(redlatch_permit_semaphore_acquire(sem, 60000, &a));
    CHECK_OK(redlatch_permit_semaphore_acquire(sem, 60000, &b));
    uint64_t n = 9;
    CHECK_OK(redlatch_permit_semaphore_available(sem, &n));
    CHECK(n == 0, "%llu available with both permits held", (unsigned long long)n);
    if (a != NULL && b != NULL) {
        CHECK(strlen(redlatch_permit_id(a)) == 32 && strcmp(redlatch_permit_id(a), redlatch_permit_id(b)) != 0,
              "ids %s %s", redlatch_permit_id(a), redlatch_permit_id(b));
        /* Release by id through the semaphore; the permit object then holds nothing. */
        char id[40];
        snprintf(id, sizeof id, "%s", redlatch_permit_id(a));
        CHECK_OK(redlatch_permit_semaphore_release(sem, id));
        CHECK_STATUS(redlatch_permit_release(a), REDLATCH_NOT_OWNED);
        CHECK_STATUS(redlatch_permit_semaphore_release(sem, id), REDLATCH_NOT_OWNED);
    }
    redlatch_permit_free(a);
    redlatch_permit_free(b); /* released by its free */
    CHECK_OK(redlatch_permit_semaphore_available(sem, &n));
    CHECK(n == 2, "%llu available after the frees", (unsigned long long)n);
    /* A permit whose lease ran out is known lost, and its release says so. */
    redlatch_permit *brief = NULL;
    bool lost = true;
    CHECK_OK(redlatch_permit_semaphore_acquire(sem, 200, &brief));
    CHECK_OK(redlatch_permit_is_lost(brief, &lost));
    CHECK(!lost, "lost at once");
    sleep_ms(400);
    CHECK_OK(redlatch_permit_is_lost(brief, &lost));
    CHECK(lost, "not lost after its lease");
    CHECK_STATUS(redlatch_permit_release(brief), REDLATCH_LOCK_LOST);
    redlatch_permit_free(brief);
    redlatch_permit_semaphore_free(sem);
    redlatch_client_free(client);
}

/* ---- count-down latch ------------------------------------------------------------------- */

#define LATCH_PROCS 4

static void test_latch_waiters_in_several_processes_all_wake(void) {
    redis_int(URL, "DEL", "cs:latch");
    redlatch_client *client = child_client(URL, 0);
    redlatch_count_down_latch *latch = NULL;
    bool set = false;
    uint64_t count = 0;
    CHECK_OK(redlatch_count_down_latch_new(client, "cs:latch", &latch));
    CHECK_OK(redlatch_count_down_latch_try_set_count(latch, 3, &set));
    CHECK(set, "count not set");
    CHECK_OK(redlatch_count_down_latch_try_set_count(latch, 5, &set));
    CHECK(!set, "count set twice");
    child kids[LATCH_PROCS];
    for (int i = 0; i < LATCH_PROCS; i++) {
        char line[64] = "";
        kids[i] = spawn("latch-waiter", NULL);
        CHECK(child_line(&kids[i], line, sizeof line, 10000) == 0 && strcmp(line, "waiting") == 0,
              "child %d: %s", i, line);
    }
    bool reached = true;
    CHECK_OK(redlatch_count_down_latch_wait(latch, 200, &reached));
    CHECK(!reached, "open before the count-downs");
    sleep_ms(300); /* the children are inside their wait */
    for (int i = 0; i < 3; i++) CHECK_OK(redlatch_count_down_latch_count_down(latch));
    uint64_t opened = wall_us();
    CHECK_OK(redlatch_count_down_latch_count(latch, &count));
    CHECK(count == 0, "count %llu", (unsigned long long)count);
    for (int i = 0; i < LATCH_PROCS; i++) {
        char line[64] = "";
        unsigned long long woke = 0;
        CHECK(child_line(&kids[i], line, sizeof line, 15000) == 0 && sscanf(line, "open %llu", &woke) == 1,
              "child %d: %s", i, line);
        /* Woken by the latch channel, not by the 10 s timeout. */
        CHECK(woke < opened + 3000000ull * (unsigned long long)slow_factor(), "child %d woke late", i);
        CHECK(child_wait(&kids[i], 10000) == 0, "child %d", i);
    }
    CHECK_OK(redlatch_count_down_latch_wait(latch, 0, &reached));
    CHECK(reached, "an open latch reads as closed");
    redlatch_count_down_latch_free(latch);
    redlatch_client_free(client);
}

/* ---- multi-lock ------------------------------------------------------------------------- */

static void test_multi_locks_in_opposite_orders_keep_exact_counters(void) {
    redis_int(URL, "DEL", "cs:a:counter");
    redis_int(URL, "DEL", "cs:b:counter");
    child kids[4];
    for (int i = 0; i < 4; i++) {
        kids[i] = i % 2 ? spawn("multi", "cs:b", "cs:a", NULL) : spawn("multi", "cs:a", "cs:b", NULL);
    }
    for (int i = 0; i < 4; i++) {
        int rc = child_wait(&kids[i], 60000);
        CHECK(rc == 0, "child %d exited with %d", i, rc);
    }
    rconn c;
    rreply r;
    CHECK(rconn_open(&c, URL) == 0, "connect");
    rcmd(&c, &r, "GET", "cs:a:counter", NULL);
    CHECK(!r.is_null && atoi(r.str) == 40, "counter a is %s, want 40", r.str);
    rcmd(&c, &r, "GET", "cs:b:counter", NULL);
    CHECK(!r.is_null && atoi(r.str) == 40, "counter b is %s, want 40", r.str);
    rconn_close(&c);
}

static void test_multi_lock_of_handles_is_all_or_nothing(void) {
    redlatch_client *client = child_client(URL, 0);
    redlatch_lock_options o = redlatch_lock_options_default();
    o.lease_ms = 10000;
    o.wait_ms = 0;
    redlatch_lock *a = NULL, *b = NULL, *busy = NULL;
    CHECK_OK(redlatch_lock_new(client, "cs:m:a", &o, &a));
    CHECK_OK(redlatch_rlock_new(client, "cs:m:b", &o, &b));
    o.owner_id = 9;
    CHECK_OK(redlatch_rlock_new(client, "cs:m:b", &o, &busy));
    const redlatch_lock *members[2] = {a, b};
    redlatch_multi_lock *multi = NULL;
    redlatch_lock_options mo = redlatch_lock_options_default();
    mo.wait_ms = 300;
    CHECK_OK(redlatch_multi_lock_new(client, members, 2, &mo, &multi));
    CHECK_OK(redlatch_lock_acquire(busy));
    CHECK_STATUS(redlatch_multi_lock_acquire(multi), REDLATCH_NOT_ACQUIRED);
    CHECK_STATUS(redlatch_multi_lock_acquire_for(multi, 0), REDLATCH_NOT_ACQUIRED);
    bool flag = true;
    CHECK_OK(redlatch_lock_is_locked(a, &flag));
    CHECK(!flag, "a part of a failed multi-lock is still held");
    CHECK_OK(redlatch_lock_release(busy));
    CHECK_OK(redlatch_multi_lock_try_acquire(multi, &flag));
    CHECK(flag, "free multi-lock not acquired");
    CHECK_STATUS(redlatch_multi_lock_acquire(multi), REDLATCH_INVALID_ARGUMENT);
    CHECK_OK(redlatch_lock_is_locked(a, &flag));
    CHECK(flag, "member a not held");
    CHECK_OK(redlatch_multi_lock_release(multi));
    CHECK_STATUS(redlatch_multi_lock_release(multi), REDLATCH_NOT_OWNED);
    CHECK_OK(redlatch_lock_is_locked(b, &flag));
    CHECK(!flag, "member b still held after release");
    CHECK_OK(redlatch_multi_lock_acquire(multi));
    redlatch_multi_lock_free(multi); /* releases */
    CHECK_OK(redlatch_lock_is_locked(a, &flag));
    CHECK(!flag, "free did not release the multi-lock");
    /* A lease member this thread holds through its own handle: the multi-lock would wait for
       it (for ever without a wait), so it is refused at once, nothing sent (Python's rule). */
    CHECK_OK(redlatch_multi_lock_new(client, members, 2, &mo, &multi));
    CHECK_OK(redlatch_lock_acquire(a));
    CHECK_STATUS(redlatch_multi_lock_acquire(multi), REDLATCH_INVALID_ARGUMENT);
    CHECK(strstr(redlatch_last_error(), "would wait for it") != NULL, "%s",
          redlatch_last_error());
    CHECK_OK(redlatch_lock_is_locked(b, &flag));
    CHECK(!flag, "a member was taken by the refused multi-lock");
    CHECK_OK(redlatch_lock_release(a));
    CHECK_OK(redlatch_multi_lock_acquire(multi));
    CHECK_OK(redlatch_multi_lock_release(multi));
    redlatch_multi_lock_free(multi);
    redlatch_lock_free(a);
    redlatch_lock_free(b);
    redlatch_lock_free(busy);
    redlatch_client_free(client);
}

/* ---- bad input -------------------------------------------------------------------------- */

static void test_bad_input_is_refused(void) {
    redlatch_client *client = child_client(URL, 0);
    redlatch_semaphore *sem = NULL;
    redlatch_permit_semaphore *ps = NULL;
    redlatch_count_down_latch *latch = NULL;
    redlatch_multi_lock *multi = NULL;
    redlatch_permit *permit = NULL;
    bool flag = false;
    uint64_t n = 0;
#define INVALID(call) CHECK_STATUS(call, REDLATCH_INVALID_ARGUMENT)
    INVALID(redlatch_semaphore_new(client, "", 0, &sem));
    INVALID(redlatch_semaphore_new(NULL, "x", 0, &sem));
    INVALID(redlatch_semaphore_new(client, NULL, 0, &sem));
    INVALID(redlatch_semaphore_new(client, "x", 0, NULL));
    INVALID(redlatch_semaphore_new(client, "x", REDLATCH_MAX_DURATION_MS + 1, &sem));
    INVALID(redlatch_permit_semaphore_new(client, "", 0, &ps));
    INVALID(redlatch_count_down_latch_new(client, "", &latch));
    INVALID(redlatch_count_down_latch_new(client, "x", NULL));
    const char *names[2] = {"cs:x", ""};
    INVALID(redlatch_multi_lock_new_names(client, names, 2, NULL, &multi));
    INVALID(redlatch_multi_lock_new_names(client, names, 0, NULL, &multi));
    INVALID(redlatch_multi_lock_new_names(client, NULL, 1, NULL, &multi));
    const char *dup[2] = {"cs:x", "cs:x"};
    INVALID(redlatch_multi_lock_new_names(client, dup, 2, NULL, &multi));
    redlatch_lock_options fenced = redlatch_lock_options_default();
    fenced.fenced = true;
    INVALID(redlatch_multi_lock_new_names(client, names, 1, &fenced, &multi));
    const redlatch_lock *none[1] = {NULL};
    INVALID(redlatch_multi_lock_new(client, none, 1, NULL, &multi));
    CHECK(sem == NULL && ps == NULL && latch == NULL && multi == NULL, "out written on failure");

    CHECK_OK(redlatch_semaphore_new(client, "cs:bad", 0, &sem));
    INVALID(redlatch_semaphore_try_set_permits(sem, 0, &flag));
    INVALID(redlatch_semaphore_try_set_permits(sem, 1ull << 31, &flag));
    INVALID(redlatch_semaphore_try_set_permits(sem, 1, NULL));
    INVALID(redlatch_semaphore_acquire(sem, 0));
    INVALID(redlatch_semaphore_release(sem, 0));
    INVALID(redlatch_semaphore_try_acquire(sem, 1, NULL));
    INVALID(redlatch_semaphore_available(NULL, &n));
    INVALID(redlatch_semaphore_held(sem, NULL));
    CHECK_OK(redlatch_permit_semaphore_new(client, "cs:bad", 0, &ps));
    INVALID(redlatch_permit_semaphore_try_set_permits(ps, 0, &flag));
    INVALID(redlatch_permit_semaphore_release(ps, "not-an-id"));
    INVALID(redlatch_permit_semaphore_release(ps, NULL));
    INVALID(redlatch_permit_semaphore_acquire(ps, 0, NULL));
    INVALID(redlatch_permit_semaphore_acquire(ps, REDLATCH_MAX_DURATION_MS + 1, &permit));
    INVALID(redlatch_permit_release(NULL));
    INVALID(redlatch_permit_is_lost(NULL, &flag));
    CHECK(strcmp(redlatch_permit_id(NULL), "") == 0, "id of NULL");
    CHECK_OK(redlatch_count_down_latch_new(client, "cs:bad", &latch));
    INVALID(redlatch_count_down_latch_try_set_count(latch, 0, &flag));
    INVALID(redlatch_count_down_latch_wait(latch, REDLATCH_MAX_DURATION_MS + 1, &flag));
    INVALID(redlatch_count_down_latch_wait(latch, 0, NULL));
    INVALID(redlatch_count_down_latch_count_down(NULL));
    INVALID(redlatch_multi_lock_acquire(NULL));
    INVALID(redlatch_multi_lock_acquire_for(NULL, 0));
    INVALID(redlatch_semaphore_acquire_for(sem, 1, REDLATCH_MAX_DURATION_MS + 1));
    INVALID(redlatch_permit_semaphore_acquire_for(ps, 0, REDLATCH_MAX_DURATION_MS + 1, &permit));
    CHECK(redis_int(URL, "EXISTS", "cs:bad") == 0, "bad input reached Redis");
    /* An unknown but well-formed id: NOT_OWNED, and the id is not echoed. */
    CHECK_STATUS(redlatch_permit_semaphore_release(ps, "0123456789abcdef0123456789abcdef"), REDLATCH_NOT_OWNED);
    CHECK(strstr(redlatch_last_error(), "0123456789abcdef") == NULL, "id echoed: %s", redlatch_last_error());
#undef INVALID
    redlatch_semaphore_free(sem);
    redlatch_permit_semaphore_free(ps);
    redlatch_count_down_latch_free(latch);
    redlatch_semaphore_free(NULL);
    redlatch_permit_semaphore_free(NULL);
    redlatch_permit_free(NULL);
    redlatch_count_down_latch_free(NULL);
    redlatch_multi_lock_free(NULL);
    redlatch_client_free(client);
}

int main(int argc, char **argv) {
    URL = env_or_die("REDLATCH_TEST_URL");
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 2 && strcmp(argv[0], "child") == 0) {
        if (strcmp(argv[1], "sem-holders") == 0) return child_sem_holders();
        if (strcmp(argv[1], "permit-holder") == 0) return child_permit_holder();
        if (strcmp(argv[1], "multi") == 0 && argc >= 4) return child_multi(argv[2], argv[3]);
        if (strcmp(argv[1], "latch-waiter") == 0) return child_latch_waiter();
        return 3;
    }
    RUN(test_at_most_permits_holders_across_processes);
    RUN(test_semaphore_counts_what_the_handle_holds);
    RUN(test_initial_permits_are_set_by_the_first_call);
    RUN(test_no_permit_leaked_after_holders_are_killed);
    RUN(test_latch_waiters_in_several_processes_all_wake);
    RUN(test_multi_locks_in_opposite_orders_keep_exact_counters);
    RUN(test_multi_lock_of_handles_is_all_or_nothing);
    RUN(test_bad_input_is_refused);
    return finish();
}
