/*
 * Install test, C: built against an installed prefix only (with `pkg-config --cflags --libs
 * redlatch` for the shared library, `cc -static` with `pkg-config --static` for a fully static
 * program, and CMake's redlatch::redlatch_static for the static library with a shared libc),
 * then run against the Redis fleet. A missing header, library, symlink, .pc or CMake file
 * fails the build or the run.
 */
#include <redlatch.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed, passed;

static void check(int ok, const char *what) {
    if (ok) {
        passed++;
    } else {
        failed++;
        fprintf(stderr, "check failed: %s (last error: %s)\n", what, redlatch_last_error());
    }
}

int main(void) {
    const char *url = getenv("REDLATCH_TEST_URL");
    if (url == NULL) {
        fprintf(stderr, "REDLATCH_TEST_URL not set: run me through redlatch-fleet\n");
        return 2;
    }
    check(strcmp(redlatch_version(), REDLATCH_VERSION_STRING) == 0, "library version = header version");
    redlatch_client *client = NULL;
    redlatch_lock *lock = NULL;
    redlatch_lock_options opts = redlatch_lock_options_default();
    opts.lease_ms = 5000;
    bool got = false, owned = false;
    check(redlatch_client_new(url, NULL, &client) == REDLATCH_OK, "connect");
    check(redlatch_lock_new(client, "install:c", &opts, &lock) == REDLATCH_OK, "lock_new");
    check(redlatch_lock_try_acquire(lock, &got) == REDLATCH_OK && got, "try_acquire");
    check(redlatch_lock_owned(lock, &owned) == REDLATCH_OK && owned, "owned");
    check(redlatch_lock_release(lock) == REDLATCH_OK, "release");
    check(redlatch_lock_release(lock) == REDLATCH_NOT_OWNED, "second release is NOT_OWNED");
    check(redlatch_lock_new(client, "", NULL, &lock) == REDLATCH_INVALID_ARGUMENT, "empty name");
    redlatch_lock_free(lock);
    redlatch_client_free(client);
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
