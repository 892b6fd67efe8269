/*
 * Outcomes of the C API under faults (issue #10 items 2, 3, 6, 8; #14 item 4): the reason of
 * every NOT_OWNED / LOCK_LOST, the new statuses, a release that stays retryable when its
 * outcome is unknown, lost holds no longer counting as held, and application data under a
 * lock name. Run through target/debug/redlatch-fleet (REDLATCH_TEST_URL).
 */
#include "testutil.h"

static const char *URL;

static redlatch_client *connect_with(uint64_t network_timeout_ms) {
    redlatch_client_options opts = {0};
    opts.network_timeout_ms = network_timeout_ms;
    redlatch_client *client = NULL;
    if (redlatch_client_new(URL, &opts, &client) != REDLATCH_OK) {
        fprintf(stderr, "cannot connect to %s: %s\n", URL, redlatch_last_error());
        exit(2);
    }
    return client;
}

static redlatch_lock *make(redlatch_client *client, const char *name, bool reentrant,
                           uint64_t lease_ms) {
    redlatch_lock_options opts = redlatch_lock_options_default();
    opts.lease_ms = lease_ms;
    opts.wait_ms = 0;
    redlatch_lock *lock = NULL;
    if (reentrant) {
        CHECK_OK(redlatch_rlock_new(client, name, &opts, &lock));
    } else {
        CHECK_OK(redlatch_lock_new(client, name, &opts, &lock));
    }
    return lock;
}

static void raw(const char *a, const char *b, const char *c, const char *d) {
    rconn conn;
    rreply r;
    if (rconn_open(&conn, URL) != 0) {
        fprintf(stderr, "cannot open a raw connection\n");
        exit(2);
    }
    if (d != NULL) {
        rcmd(&conn, &r, a, b, c, d, NULL);
    } else if (c != NULL) {
        rcmd(&conn, &r, a, b, c, NULL);
    } else {
        rcmd(&conn, &r, a, b, NULL);
    }
    rconn_close(&conn);
}

#define CHECK_REASON(want)                                                                 \
    CHECK(redlatch_last_error_reason() == (want), "reason %s, want %s (last error: %s)",  \
          redlatch_reason_name(redlatch_last_error_reason()), redlatch_reason_name(want), \
          redlatch_last_error())

static void test_names_of_new_statuses_and_reasons(void) {
    CHECK(REDLATCH_NO_PERMISSION == 9 && REDLATCH_OUT_OF_MEMORY == 10 && REDLATCH_KEY_CONFLICT == 11 &&
              REDLATCH_WOULD_DEADLOCK == 12,
          "status values differ from the core's codes");
    CHECK(strcmp(redlatch_status_name(9), "NoPermission") == 0, "9");
    CHECK(strcmp(redlatch_status_name(10), "OutOfMemory") == 0, "10");
    CHECK(strcmp(redlatch_status_name(11), "KeyConflict") == 0, "11");
    CHECK(strcmp(redlatch_status_name(12), "WouldDeadlock") == 0, "12");
    CHECK(strcmp(redlatch_status_name(13), "Unknown") == 0, "13");
    static const char *words[] = {"", "expired", "taken", "deleted", "never_held", ""};
    for (int i = 0; i <= 5; i++) {
        CHECK(strcmp(redlatch_reason_name(i), words[i]) == 0, "reason %d: %s", i,
              redlatch_reason_name(i));
    }
    CHECK(strcmp(redlatch_reason_name(-1), "") == 0, "-1");
}

/* Every lock handle says its kind (the core's LockKind values), without asking Redis. */
static void test_every_lock_handle_says_its_kind(void) {
    CHECK(REDLATCH_KIND_LEASE == 0 && REDLATCH_KIND_REENTRANT == 1 && REDLATCH_KIND_FAIR == 2 &&
              REDLATCH_KIND_READ == 3 && REDLATCH_KIND_WRITE == 4,
          "kind values differ from the core's");
    redlatch_client *client = connect_with(0);
    redlatch_lock *lease = make(client, "co:kind", false, 0);
    redlatch_lock *reentrant = make(client, "co:kind-r", true, 0);
    redlatch_lock *fair = NULL, *read = NULL, *write = NULL;
    redlatch_rw_lock *rw = NULL;
    CHECK_OK(redlatch_fair_lock_new(client, "co:kind-f", NULL, &fair));
    CHECK_OK(redlatch_rw_lock_new(client, "co:kind-rw", &rw));
    CHECK_OK(redlatch_rw_lock_read(rw, NULL, &read));
    CHECK_OK(redlatch_rw_lock_write(rw, NULL, &write));
    CHECK(redlatch_lock_kind(lease) == REDLATCH_KIND_LEASE, "lease: %d", redlatch_lock_kind(lease));
    CHECK(redlatch_lock_kind(reentrant) == REDLATCH_KIND_REENTRANT, "reentrant: %d",
          redlatch_lock_kind(reentrant));
    CHECK(redlatch_lock_kind(fair) == REDLATCH_KIND_FAIR, "fair: %d", redlatch_lock_kind(fair));
    CHECK(redlatch_lock_kind(read) == REDLATCH_KIND_READ, "read: %d", redlatch_lock_kind(read));
    CHECK(redlatch_lock_kind(write) == REDLATCH_KIND_WRITE, "write: %d", redlatch_lock_kind(write));
    CHECK(redlatch_lock_kind(NULL) == -1, "NULL: %d", redlatch_lock_kind(NULL));
    redlatch_lock_free(write);
    redlatch_lock_free(read);
    redlatch_rw_lock_free(rw);
    redlatch_lock_free(fair);
    redlatch_lock_free(reentrant);
    redlatch_lock_free(lease);
    redlatch_client_free(client);
}

static void test_every_not_owned_says_why_and_a_lost_hold_is_not_held(void) {
    redlatch_client *client = connect_with(0);
    for (int reentrant = 0; reentrant <= 1; reentrant++) {
        /* Expired: released after its 200 ms lease. The lease ran out before the call, so it
           is LOCK_LOST whoever noticed first. */
        redlatch_lock *l = make(client, "co:expired", reentrant, 200);
        CHECK_OK(redlatch_lock_acquire(l));
        sleep_ms(400);
        CHECK_STATUS(redlatch_lock_release(l), REDLATCH_LOCK_LOST);
        CHECK_REASON(REDLATCH_REASON_EXPIRED);
        CHECK_STATUS(redlatch_lock_release(l), REDLATCH_NOT_OWNED);
        CHECK_REASON(REDLATCH_REASON_NEVER_HELD);

        /* A lost lease-lock hold no longer counts as held: acquiring again works. */
        CHECK_OK(redlatch_lock_acquire(l));
        sleep_ms(400);
        CHECK_OK(redlatch_lock_acquire(l));
        CHECK_OK(redlatch_lock_release(l));
        redlatch_lock_free(l);

        /* Deleted within the lease: NOT_OWNED, first found by the release. */
        l = make(client, "co:deleted", reentrant, 10000);
        CHECK_OK(redlatch_lock_acquire(l));
        raw("DEL", "co:deleted", NULL, NULL);
        CHECK_STATUS(redlatch_lock_release(l), REDLATCH_NOT_OWNED);
        CHECK_REASON(REDLATCH_REASON_DELETED);
        /* Other failures have no reason. */
        CHECK_STATUS(redlatch_lock_extend(l, 0), REDLATCH_INVALID_ARGUMENT);
        CHECK_REASON(REDLATCH_REASON_NONE);
        redlatch_lock_free(l);
    }
    redlatch_client_free(client);
}

/* CLIENT PAUSE holds the release past the network timeout: its outcome is unknown (it is
   applied when the pause ends). The hold stays with the handle and a second release settles
   it, exactly once. */
static void test_a_release_with_an_unknown_outcome_is_retried(void) {
    redlatch_client *client = connect_with(300);
    for (int reentrant = 0; reentrant <= 1; reentrant++) {
        const char *name = reentrant ? "co:retry-r" : "co:retry";
        redlatch_lock *l = make(client, name, reentrant, 20000);
        CHECK_OK(redlatch_lock_acquire(l));
        if (reentrant) CHECK_OK(redlatch_lock_acquire(l)); /* nested: two levels */
        raw("CLIENT", "PAUSE", "1000", "ALL");
        CHECK_STATUS(redlatch_lock_release(l), REDLATCH_CONNECTION);
        sleep_ms(1200);
        CHECK_OK(redlatch_lock_release(l));
        if (reentrant) {
            uint64_t count = 0;
            CHECK_OK(redlatch_lock_hold_count(l, &count));
            CHECK(count == 1, "decremented once, not twice: %llu", (unsigned long long)count);
            CHECK_OK(redlatch_lock_release(l));
        }
        CHECK(redis_int(URL, "EXISTS", name) == 0, "%s released", name);
        CHECK_STATUS(redlatch_lock_release(l), REDLATCH_NOT_OWNED);
        CHECK_REASON(REDLATCH_REASON_NEVER_HELD);
        redlatch_lock_free(l);
    }
    redlatch_client_free(client);
}

/* Freeing a handle releases its holds all at once: a Redis that does not answer costs one
   network timeout in all. Found by a user trial of stop 49: three holds took three network
   timeouts (9 s with 3 s). */
static void test_freeing_a_handle_with_holds_blocks_one_network_timeout_in_all(void) {
    redlatch_client *client = connect_with(1000);
    redlatch_lock *l = make(client, "co:free-paused", true, 20000);
    for (int i = 0; i < 3; i++) CHECK_OK(redlatch_lock_acquire(l));
    raw("CLIENT", "PAUSE", "3000", "ALL");
    uint64_t t0 = now_ms();
    redlatch_lock_free(l);
    uint64_t took = now_ms() - t0;
    CHECK(took < 2500, "freed within about one network timeout (1000 ms): %llu ms",
          (unsigned long long)took);
    sleep_ms(3500); /* the pause ended: the releases sent during it applied */
    CHECK(redis_int(URL, "EXISTS", "co:free-paused") == 0, "every hold released");
    redlatch_client_free(client);
}

/* Semaphore `name` of 3 permits (its release script cached), `taken` of them acquired by the
   handle returned, and the server paused for 1 s: the next call's outcome stays unknown. */
static redlatch_semaphore *semaphore_taken_then_paused(redlatch_client *client, const char *name,
                                                       uint64_t taken) {
    redlatch_semaphore *sem = NULL;
    bool set = false;
    CHECK_OK(redlatch_semaphore_new(client, name, 0, &sem));
    CHECK_OK(redlatch_semaphore_try_set_permits(sem, 3, &set));
    CHECK_OK(redlatch_semaphore_acquire(sem, 1));
    CHECK_OK(redlatch_semaphore_release(sem, 1)); /* its script cached */
    CHECK_OK(redlatch_semaphore_acquire(sem, taken));
    raw("CLIENT", "PAUSE", "1000", "ALL");
    return sem;
}

/* The permits semaphore `name` has, read through a new handle. */
static uint64_t available_permits(redlatch_client *client, const char *name) {
    redlatch_semaphore *sem = NULL;
    uint64_t available = 0;
    CHECK_OK(redlatch_semaphore_new(client, name, 0, &sem));
    CHECK_OK(redlatch_semaphore_available(sem, &available));
    redlatch_semaphore_free(sem);
    return available;
}

/* A release for a path that cannot call again (a C++ SemaphoreGuard's destructor) whose outcome
   is unknown: the permit leaves the handle at once and is given back exactly once. Found by a
   user trial: the guard's release applied after the pause while the handle kept counting the
   permit, and freeing the handle gave it back a second time (4 of 3 permits, for good). */
static void test_a_final_semaphore_release_with_an_unknown_outcome_gives_back_once(void) {
    redlatch_client *client = connect_with(300);
    uint64_t held = 9, available = 0;
    redlatch_semaphore *sem = semaphore_taken_then_paused(client, "co:sem-final", 1);
    CHECK_STATUS(redlatch_semaphore_release_final(sem, 1), REDLATCH_CONNECTION);
    CHECK_OK(redlatch_semaphore_held(sem, &held));
    CHECK(held == 0, "the permit left the handle: held %llu", (unsigned long long)held);
    sleep_ms(1500);
    CHECK_OK(redlatch_semaphore_available(sem, &available));
    CHECK(available == 3, "given back: %llu of 3", (unsigned long long)available);
    CHECK_STATUS(redlatch_semaphore_release(sem, 1), REDLATCH_NOT_OWNED);
    redlatch_semaphore_free(sem); /* gives back what it still holds: nothing */
    available = available_permits(client, "co:sem-final");
    CHECK(available == 3, "given back once: %llu of 3", (unsigned long long)available);
    redlatch_client_free(client);
}

/* Freeing a handle that counts a release of unknown outcome which applied: the release is
   settled by its latch, and only the rest is given back. Found by a re-trial of stop 45: the
   count went above its size (the handle gave back everything it counted). */
static void test_freeing_a_handle_settles_a_release_of_unknown_outcome(void) {
    redlatch_client *client = connect_with(300);
    redlatch_semaphore *sem = semaphore_taken_then_paused(client, "co:sem-free", 3);
    CHECK_STATUS(redlatch_semaphore_release(sem, 2), REDLATCH_CONNECTION);
    sleep_ms(1200); /* applied when the pause ended */
    redlatch_semaphore_free(sem);
    uint64_t available = available_permits(client, "co:sem-free");
    CHECK(available == 3, "each permit given back once: %llu of 3", (unsigned long long)available);
    redlatch_client_free(client);
}

static void test_application_data_under_a_lock_name_is_a_key_conflict(void) {
    redlatch_client *client = connect_with(0);
    raw("SET", "co:data", "not a lock", NULL);
    for (int reentrant = 0; reentrant <= 1; reentrant++) {
        redlatch_lock *l = make(client, "co:data", reentrant, 1000);
        uint64_t t0 = now_ms();
        CHECK_STATUS(redlatch_lock_acquire_for(l, 5000), REDLATCH_KEY_CONFLICT);
        CHECK(now_ms() - t0 < 2000, "at once, not after the wait");
        bool got = true;
        CHECK_STATUS(redlatch_lock_try_acquire(l, &got), REDLATCH_KEY_CONFLICT);
        redlatch_lock_free(l);
    }
    CHECK(redis_int(URL, "EXISTS", "co:data") == 1, "the data is untouched");
    raw("DEL", "co:data", NULL, NULL);
    redlatch_client_free(client);
}

int main(void) {
    URL = env_or_die("REDLATCH_TEST_URL");
    setvbuf(stdout, NULL, _IOLBF, 0);
    RUN(test_names_of_new_statuses_and_reasons);
    RUN(test_every_lock_handle_says_its_kind);
    RUN(test_every_not_owned_says_why_and_a_lost_hold_is_not_held);
    RUN(test_a_release_with_an_unknown_outcome_is_retried);
    RUN(test_freeing_a_handle_with_holds_blocks_one_network_timeout_in_all);
    RUN(test_a_final_semaphore_release_with_an_unknown_outcome_gives_back_once);
    RUN(test_freeing_a_handle_settles_a_release_of_unknown_outcome);
    RUN(test_application_data_under_a_lock_name_is_a_key_conflict);
    return finish();
}
