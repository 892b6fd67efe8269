/*
 * The deployments of issue #14 through the C API: TLS (CA file, PEM text, mutual TLS, the
 * failures that must fail closed), a Redis Cluster (redlatch_client_new_cluster and
 * redis+cluster://), Sentinel with the sentinels' password and sync_replicas, the eviction
 * warning callback, and no password in any error message. Run through
 *   target/debug/redlatch-fleet --deployments -- ./test_deployments
 * Prints one line per case and finally "N passed, N failed"; exits 1 if any case failed.
 */
/* testutil.h's RESP helpers are for the main suite; this one needs only the runner. */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "testutil.h"

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* Defaults, with the network timeout scaled for slow runs (valgrind: REDLATCH_TEST_SLOW). */
static redlatch_client_options defaults(void) {
    redlatch_client_options o = {0};
    o.network_timeout_ms = 3000 * (uint64_t)slow_factor();
    return o;
}

static redlatch_client_options tls_options(void) {
    redlatch_client_options o = defaults();
    o.tls_ca_file = env_or_die("REDLATCH_TEST_TLS_CA");
    o.tls_cert_file = env_or_die("REDLATCH_TEST_TLS_CERT");
    o.tls_key_file = env_or_die("REDLATCH_TEST_TLS_KEY");
    return o;
}

/* One try on `name` through `client`: REDLATCH_OK when acquired (then released). */
static redlatch_status try_once(redlatch_client *client, const char *name) {
    redlatch_lock_options lo = redlatch_lock_options_default();
    lo.lease_ms = 5000;
    lo.wait_ms = 0;
    redlatch_lock *lock = NULL;
    redlatch_status st = redlatch_lock_new(client, name, &lo, &lock);
    if (st != REDLATCH_OK) return st;
    st = redlatch_lock_acquire(lock);
    if (st == REDLATCH_OK) CHECK_OK(redlatch_lock_release(lock));
    redlatch_lock_free(lock);
    return st;
}

static void test_mutual_tls_with_a_ca_file_and_pem_text(void) {
    const char *url = env_or_die("REDLATCH_TEST_TLS_URL");
    redlatch_client_options o = tls_options();
    redlatch_client *client = NULL;
    CHECK_OK(redlatch_client_new(url, &o, &client));
    if (client) CHECK_OK(try_once(client, "c-deploy:tls"));
    redlatch_client_free(client);
    client = NULL;
    o.tls_ca_file = NULL;
    o.tls_ca_pem = read_file(env_or_die("REDLATCH_TEST_TLS_CA"));
    CHECK(o.tls_ca_pem != NULL, "cannot read the CA file");
    CHECK_OK(redlatch_client_new(url, &o, &client));
    redlatch_client_free(client);
}

/* `call` fails with `want` and the last error contains `needle`. */
#define CHECK_FAILS(call, want, needle)                                                     \
    do {                                                                                    \
        CHECK_STATUS(call, want);                                                           \
        CHECK(strstr(redlatch_last_error(), needle) != NULL, "message: %s", redlatch_last_error()); \
    } while (0)

static void test_tls_failures_fail_closed_and_say_which(void) {
    const char *url = env_or_die("REDLATCH_TEST_TLS_URL");
    redlatch_client *client = NULL;
    redlatch_client_options o = tls_options();
    o.tls_ca_file = env_or_die("REDLATCH_TEST_TLS_OTHER_CA");
    CHECK_FAILS(redlatch_client_new(url, &o, &client), REDLATCH_CONNECTION, "not signed by a trusted CA");
    o = tls_options();
    o.tls_server_name = "elsewhere.test";
    CHECK_FAILS(redlatch_client_new(url, &o, &client), REDLATCH_CONNECTION, "not valid for the name");
    o = tls_options();
    o.tls_cert_file = NULL;
    o.tls_key_file = NULL;
    CHECK_FAILS(redlatch_client_new(url, &o, &client), REDLATCH_CONNECTION, "client certificate");
    o = tls_options();
    o.tls_key_file = NULL;
    CHECK_FAILS(redlatch_client_new(url, &o, &client), REDLATCH_INVALID_ARGUMENT, "needs its key");
    o = tls_options();
    o.tls_ca_file = "/nonexistent/ca.pem";
    CHECK_FAILS(redlatch_client_new(url, &o, &client), REDLATCH_INVALID_ARGUMENT, "cannot read the CA file");
    CHECK(client == NULL, "a failed call wrote *out");
}

static void test_cluster_by_seed_list_and_by_url(void) {
    char urls_env[1024];
    snprintf(urls_env, sizeof urls_env, "%s", env_or_die("REDLATCH_TEST_CLUSTER_URLS"));
    const char *seeds[8];
    size_t n = 0;
    for (char *tok = strtok(urls_env, ","); tok && n < 8; tok = strtok(NULL, ",")) seeds[n++] = tok;
    redlatch_client *cluster = NULL;
    redlatch_client_options o = defaults();
    CHECK_OK(redlatch_client_new_cluster(seeds, n, &o, &cluster));
    char url[1100] = "redis+cluster://";
    for (size_t i = 0; i < n; i++) {
        strcat(url, seeds[i] + strlen("redis://"));
        if (i + 1 < n) strcat(url, ",");
    }
    redlatch_client *by_url = NULL;
    CHECK_OK(redlatch_client_new(url, &o, &by_url));
    if (cluster == NULL || by_url == NULL) return;
    for (int i = 0; i < 6; i++) { /* names on several shards */
        char name[64];
        snprintf(name, sizeof name, "c-deploy:cluster:%d", i);
        redlatch_lock_options lo = redlatch_lock_options_default();
        lo.lease_ms = 5000;
        lo.wait_ms = 0;
        lo.fenced = true;
        redlatch_lock *lock = NULL;
        CHECK_OK(redlatch_lock_new(cluster, name, &lo, &lock));
        CHECK_OK(redlatch_lock_acquire(lock));
        uint64_t token = 0;
        CHECK_OK(redlatch_lock_fencing_token(lock, &token));
        CHECK(token > 0, "no fencing token");
        CHECK_STATUS(try_once(by_url, name), REDLATCH_NOT_ACQUIRED);
        CHECK_OK(redlatch_lock_release(lock));
        redlatch_lock_free(lock);
    }
    CHECK_STATUS(redlatch_client_new_cluster(seeds, 0, NULL, &cluster), REDLATCH_INVALID_ARGUMENT);
    redlatch_client_free(cluster);
    redlatch_client_free(by_url);
}

static void test_sentinel_with_password_and_sync_replicas(void) {
    const char *url = env_or_die("REDLATCH_TEST_SENTINEL_URL");
    redlatch_client_options o = defaults();
    o.sentinel_password = env_or_die("REDLATCH_TEST_SENTINEL_PASSWORD");
    o.sync_replicas = 1;
    redlatch_client *client = NULL;
    CHECK_OK(redlatch_client_new(url, &o, &client));
    if (client) CHECK_OK(try_once(client, "c-deploy:sentinel"));
    redlatch_client_free(client);
    client = NULL;
    o.sentinel_password = "not-it";
    CHECK_STATUS(redlatch_client_new(url, &o, &client), REDLATCH_CONNECTION);
    CHECK(strstr(redlatch_last_error(), "not-it") == NULL, "password shown: %s", redlatch_last_error());
    CHECK(strstr(redlatch_last_error(), "fleet-data-pw") == NULL, "password shown: %s", redlatch_last_error());
    o.sentinel_password = NULL;
    o.sentinel_username = "someone";
    CHECK_FAILS(redlatch_client_new(url, &o, &client), REDLATCH_INVALID_ARGUMENT, "sentinel password");
}

typedef struct {
    int count;
    char kind[32];
    char message[512];
} warnings_seen;

static void on_warning(void *user_data, const char *kind, const char *message) {
    warnings_seen *seen = user_data;
    seen->count++;
    snprintf(seen->kind, sizeof seen->kind, "%s", kind);
    snprintf(seen->message, sizeof seen->message, "%s", message);
}

static void test_an_evicting_policy_calls_the_warning_callback_once(void) {
    warnings_seen seen = {0};
    redlatch_client_options o = defaults();
    o.on_warning = on_warning;
    o.warning_user_data = &seen;
    redlatch_client *client = NULL;
    CHECK_OK(redlatch_client_new(env_or_die("REDLATCH_TEST_EVICTING_URL"), &o, &client));
    if (client) {
        CHECK_OK(try_once(client, "c-deploy:evict"));
        CHECK_OK(try_once(client, "c-deploy:evict"));
    }
    redlatch_client_free(client);
    CHECK(seen.count == 1, "%d warnings", seen.count);
    CHECK(strcmp(seen.kind, "eviction") == 0, "kind %s", seen.kind);
    CHECK(strstr(seen.message, "maxmemory-policy is allkeys-lru") != NULL, "message %s", seen.message);
}

static void test_no_password_in_error_messages(void) {
    const char *secret = "pw-Zq81-secret";
    redlatch_client_options o = {0};
    o.network_timeout_ms = 500;
    redlatch_client *client = NULL;
    CHECK_STATUS(redlatch_client_new("redis://user:pw-Zq81-secret@127.0.0.1:1", &o, &client),
                 REDLATCH_CONNECTION);
    CHECK(strstr(redlatch_last_error(), secret) == NULL, "shown: %s", redlatch_last_error());
    CHECK_STATUS(redlatch_client_new("redis://user:pw-Zq81-secret@[bad", &o, &client),
                 REDLATCH_INVALID_ARGUMENT);
    CHECK(strstr(redlatch_last_error(), secret) == NULL, "shown: %s", redlatch_last_error());
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    RUN(test_mutual_tls_with_a_ca_file_and_pem_text);
    RUN(test_tls_failures_fail_closed_and_say_which);
    RUN(test_cluster_by_seed_list_and_by_url);
    RUN(test_sentinel_with_password_and_sync_replicas);
    RUN(test_an_evicting_policy_calls_the_warning_callback_once);
    RUN(test_no_password_in_error_messages);
    return finish();
}
