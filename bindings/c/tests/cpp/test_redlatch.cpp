// The C++ test suite: redlatch.hpp's RAII types, exceptions, and the Lockable/TimedLockable
// requirements through std::lock_guard, std::unique_lock, std::scoped_lock and std::lock.
// Run through the fleet: target/debug/redlatch-fleet --quorum 3 --deployments -- ./test_redlatch_cpp
// Prints one line per case and finally "N passed, N failed"; exits 1 if any case failed.
#include <redlatch.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

int passed = 0, failed = 0;
bool case_failed = false;
std::string url;
std::vector<std::string> quorum_urls;

#define CHECK(cond)                                                                           \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            case_failed = true;                                                               \
            std::cerr << "  check failed at " << __FILE__ << ":" << __LINE__ << ": " #cond "\n"; \
        }                                                                                     \
    } while (0)

// Runs `body`, expecting a redlatch::Error with `status`.
template <class F>
void expect_error(redlatch_status status, F body, int line) {
    try {
        body();
        case_failed = true;
        std::cerr << "  line " << line << ": no exception, want " << redlatch_status_name(status) << "\n";
    } catch (const redlatch::Error &e) {
        if (e.status() != status) {
            case_failed = true;
            std::cerr << "  line " << line << ": got " << e.status_name() << " (" << e.what() << "), want "
                      << redlatch_status_name(status) << "\n";
        }
    }
}
#define EXPECT_ERROR(status, ...) expect_error(status, [&] { __VA_ARGS__; }, __LINE__)

void run(const char *name, void (*fn)()) {
    case_failed = false;
    std::cerr << "-- " << name << "\n";
    try {
        fn();
    } catch (const redlatch::Error &e) {
        case_failed = true;
        std::cerr << "  unexpected redlatch::Error " << e.status_name() << ": " << e.what() << "\n";
    } catch (const std::exception &e) {
        case_failed = true;
        std::cerr << "  unexpected exception: " << e.what() << "\n";
    }
    (case_failed ? failed : passed)++;
    std::cout << (case_failed ? "FAIL " : "ok   ") << name << std::endl;
}
#define RUN(fn) run(#fn, fn)

long long elapsed_ms(Clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

// ---- compile-time: the standard requirements ---------------------------------------------

template <class M, class = void>
struct is_timed_lockable : std::false_type {};
template <class M>
struct is_timed_lockable<M, std::void_t<decltype(std::declval<M &>().lock()),
                                        decltype(std::declval<M &>().unlock()),
                                        decltype(bool(std::declval<M &>().try_lock())),
                                        decltype(bool(std::declval<M &>().try_lock_for(1ms))),
                                        decltype(bool(std::declval<M &>().try_lock_until(
                                            Clock::now())))>> : std::true_type {};
static_assert(is_timed_lockable<redlatch::Lock>::value, "Lock must be TimedLockable");
static_assert(noexcept(std::declval<redlatch::Lock &>().unlock()), "unlock must not throw");
static_assert(!std::is_copy_constructible<redlatch::Lock>::value, "Lock is move-only");
static_assert(std::is_nothrow_move_constructible<redlatch::Lock>::value, "Lock moves");
static_assert(std::is_nothrow_move_assignable<redlatch::Lock>::value, "Lock moves");
static_assert(!std::is_copy_constructible<redlatch::Client>::value, "Client is move-only");

// ---- cases -------------------------------------------------------------------------------

void test_lock_guard_holds_for_the_scope() {
    redlatch::Client client(url);
    redlatch::Lock lock = client.lock("cpp:guard", redlatch::LockOptions().lease(10s));
    redlatch::Lock probe = client.lock("cpp:guard");
    CHECK(!probe.locked());
    {
        std::lock_guard<redlatch::Lock> held(lock);
        CHECK(probe.locked());
        CHECK(lock.owned());
        auto ttl = probe.ttl();
        CHECK(ttl.has_value() && *ttl > 5s && *ttl <= 10s);
    }
    CHECK(!probe.locked());
    CHECK(!probe.ttl().has_value());
}

void test_unique_lock_try_lock_for_times_out_then_succeeds() {
    redlatch::Client a(url), b(url);
    redlatch::Lock holder = a.lock("cpp:timed", redlatch::LockOptions().lease(10s));
    redlatch::Lock waiter = b.lock("cpp:timed", redlatch::LockOptions().lease(10s));
    holder.lock();
    std::unique_lock<redlatch::Lock> ul(waiter, std::defer_lock);
    auto t0 = Clock::now();
    CHECK(!ul.try_lock_for(300ms));
    long long took = elapsed_ms(t0);
    CHECK(took >= 290 && took <= 1300);
    CHECK(!ul.owns_lock());
    t0 = Clock::now();
    CHECK(!ul.try_lock_until(Clock::now() + 200ms));
    took = elapsed_ms(t0);
    CHECK(took >= 190 && took <= 1200);
    // A deadline already past, however far: one try (time_point::min() overflowed
    // `t - now()` into a wait of centuries before stop 46: a C++ user trial saw it block).
    t0 = Clock::now();
    CHECK(!waiter.try_lock_until(Clock::time_point::min()));
    CHECK(!waiter.try_lock_until(std::chrono::system_clock::time_point::min()));
    CHECK(!waiter.try_lock_until(Clock::now() - 1h));
    CHECK(elapsed_ms(t0) <= 1200);
    CHECK(!ul.try_lock());

    redlatch_status other_thread = REDLATCH_OK;
    std::thread other([&] {
        try {
            holder.release();
        } catch (const redlatch::Error &e) {
            other_thread = e.status();
        }
    });
    other.join();
    // The hold belongs to the thread that acquired it: another thread cannot release it.
    CHECK(other_thread == REDLATCH_NOT_OWNED);
    CHECK(holder.owned());
    holder.unlock();
    CHECK(ul.try_lock_for(2s));
    CHECK(ul.owns_lock());
    ul.unlock();
    std::unique_lock<redlatch::Lock> timed(waiter, 1s);  // the timed constructor
    CHECK(timed.owns_lock());
    timed.unlock();
    // "Forever" as TimedLockable code spells it waits (the lock is free here), not refused
    // (it threw InvalidArgument before stop 37: found by a user trial).
    CHECK(waiter.try_lock_for(std::chrono::milliseconds::max()));
    waiter.unlock();
    CHECK(waiter.try_lock_until(Clock::time_point::max()));
    waiter.unlock();
}

void test_scoped_lock_and_std_lock_take_both() {
    redlatch::Client client(url);
    redlatch::Lock x = client.lock("cpp:x", redlatch::LockOptions().lease(10s));
    redlatch::Lock y = client.lock("cpp:y", redlatch::LockOptions().lease(10s));
    redlatch::Lock px = client.lock("cpp:x"), py = client.lock("cpp:y");
    {
        std::scoped_lock both(x, y);
        CHECK(px.locked() && py.locked());
    }
    CHECK(!px.locked() && !py.locked());
    std::lock(x, y);
    CHECK(px.locked() && py.locked());
    x.unlock();
    y.unlock();
    CHECK(!px.locked() && !py.locked());
}

void test_exceptions_carry_the_status() {
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, redlatch::Client(""));
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, redlatch::Client(std::string("redis://x\0y", 11)));
    redlatch::ClientOptions bad;
    bad.watchdog_timeout = 1ms;
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, redlatch::Client(url, bad));
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, redlatch::Client::quorum({}));
    redlatch::Client a(url), b(url);
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, a.lock(""));
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, a.lock(std::string("a\0b", 3)));
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, a.lock("cpp:e", redlatch::LockOptions().lease(0ms)));
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, a.lock("cpp:e", redlatch::LockOptions().lease(-5s)));
    // Zero or negative fence TTLs and negative client timeouts are refused (they silently
    // meant "the counter persists" and "the default" before stop 37).
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, redlatch::LockOptions().fenced().fence_ttl(0s));
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, redlatch::LockOptions().fenced().fence_ttl(-1h));
    redlatch::ClientOptions negative;
    negative.network_timeout = -1ms;
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, redlatch::Client(url, negative));
    // NaN durations are refused, not converted (undefined behaviour) into "one try".
    const std::chrono::duration<double> nan_s(std::nan(""));
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, redlatch::LockOptions().wait(nan_s));
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, redlatch::LockOptions().lease(nan_s));
    // The messages say what is wrong.
    auto message_of = [](auto body) -> std::string {
        try {
            body();
        } catch (const redlatch::Error &e) {
            return e.what();
        }
        return "";
    };
    CHECK(message_of([] { redlatch::LockOptions().lease(0ms); }).find("greater than zero") != std::string::npos);
    CHECK(message_of([] { redlatch::Client::quorum({}); }).find("at least one URL") != std::string::npos);
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, a.rlock("cpp:e", redlatch::LockOptions().owner_id(UINT64_MAX)));
    redlatch::Lock la = a.lock("cpp:e", redlatch::LockOptions().lease(5s));
    redlatch::Lock lb = b.lock("cpp:e", redlatch::LockOptions().lease(5s).wait(100ms));
    EXPECT_ERROR(REDLATCH_NOT_OWNED, la.release());
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, la.fencing_token());  // not fenced
    la.lock();
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, la.lock());  // not reentrant: refused, no deadlock
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, la.extend(0ms));
    try {
        lb.lock();  // waits 100 ms
        CHECK(false);
    } catch (const redlatch::Error &e) {
        CHECK(e.status() == REDLATCH_NOT_ACQUIRED);
        CHECK(std::string(e.status_name()) == "NotAcquired");
        CHECK(std::string(e.what()).find("NotAcquired") == 0);
    }
    EXPECT_ERROR(REDLATCH_NOT_OWNED, lb.extend(1s));
    la.extend(20s);
    CHECK(la.ttl().value_or(0ms) > 10s);
    la.release();
    try {
        la.release();
        CHECK(false);
    } catch (const redlatch::Error &e) {
        CHECK(e.status() == REDLATCH_NOT_OWNED);
        CHECK(e.reason() == REDLATCH_REASON_NEVER_HELD);
        CHECK(std::string(e.reason_name()) == "never_held");
    }
    CHECK(redlatch::version() == REDLATCH_VERSION_STRING);
}

void test_rlock_reenters_and_moves() {
    redlatch::Client client(url);
    redlatch::Lock r = client.rlock("cpp:r");
    {
        std::lock_guard<redlatch::Lock> outer(r);
        std::lock_guard<redlatch::Lock> inner(r);
        CHECK(r.hold_count() == 2);
        redlatch::Lock moved = std::move(r);  // the holds move with the handle
        CHECK(moved.hold_count() == 2);
        r = std::move(moved);
        CHECK(r.hold_count() == 2);
    }
    CHECK(r.hold_count() == 0);
    CHECK(!r.locked());
}

void test_fencing_tokens_increase() {
    redlatch::Client client(url);
    redlatch::Lock f = client.lock("cpp:fenced", redlatch::LockOptions().fenced().lease(5s));
    std::uint64_t t1, t2;
    {
        std::lock_guard<redlatch::Lock> g(f);
        t1 = f.fencing_token();
    }
    {
        std::lock_guard<redlatch::Lock> g(f);
        t2 = f.fencing_token();
    }
    CHECK(t1 > 0 && t2 > t1);
}

void test_on_lost_runs_the_handler() {
    redlatch::ClientOptions opts;
    opts.watchdog_timeout = 300ms;
    redlatch::Client client(url, opts), admin(url);
    redlatch::Lock lock = client.lock("cpp:lost");  // watchdog mode
    std::atomic<int> calls{0};
    std::string seen;
    std::mutex m;
    lock.on_lost([&](const std::string &name) {
        {
            std::lock_guard<std::mutex> g(m);
            seen = name;
        }
        calls++;
    });
    lock.lock();
    std::this_thread::sleep_for(500ms);
    CHECK(calls == 0);
    CHECK(admin.force_unlock("cpp:lost"));
    auto t0 = Clock::now();
    while (calls == 0 && elapsed_ms(t0) < 3000) std::this_thread::sleep_for(10ms);
    CHECK(calls == 1);
    {
        std::lock_guard<std::mutex> g(m);
        CHECK(seen == "cpp:lost");
    }
    CHECK(lock.is_lost());
    EXPECT_ERROR(REDLATCH_LOCK_LOST, lock.release());
    lock.on_lost(nullptr);
}

void test_quorum_lock_guard() {
    redlatch::Client q = redlatch::Client::quorum(quorum_urls);
    redlatch::Lock lock = q.lock("cpp:quorum", redlatch::LockOptions().lease(5s));
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, q.lock("cpp:quorum", redlatch::LockOptions().fenced()));
    {
        std::lock_guard<redlatch::Lock> g(lock);
        CHECK(lock.owned());
    }
    CHECK(!lock.locked());
}

}  // namespace

// Deployments (redlatch-fleet --deployments; skipped without it): mutual TLS, a Cluster,
// Sentinel with the sentinels' password and sync_replicas, and the warning handler.
std::string env(const char *name) {
    const char *v = std::getenv(name);
    return v ? v : "";
}

void test_deployments_tls_cluster_sentinel_and_warnings() {
    if (env("REDLATCH_TEST_TLS_URL").empty()) {
        std::cerr << "  skipped: not run under redlatch-fleet --deployments\n";
        return;
    }
    redlatch::ClientOptions tls;
    tls.tls.ca_file = env("REDLATCH_TEST_TLS_CA");
    tls.tls.cert_file = env("REDLATCH_TEST_TLS_CERT");
    tls.tls.key_file = env("REDLATCH_TEST_TLS_KEY");
    {
        redlatch::Client client(env("REDLATCH_TEST_TLS_URL"), tls);
        redlatch::Lock lock = client.lock("cpp:tls", redlatch::LockOptions().lease(5s));
        std::lock_guard<redlatch::Lock> held(lock);
        CHECK(lock.owned());
    }
    tls.tls.server_name = "elsewhere.test";
    EXPECT_ERROR(REDLATCH_CONNECTION, redlatch::Client(env("REDLATCH_TEST_TLS_URL"), tls));

    std::vector<std::string> seeds;
    std::stringstream ss(env("REDLATCH_TEST_CLUSTER_URLS"));
    for (std::string item; std::getline(ss, item, ',');) seeds.push_back(item);
    redlatch::Client cluster = redlatch::Client::cluster(seeds);
    for (int i = 0; i < 4; i++) {
        redlatch::Lock lock = cluster.lock("cpp:cluster:" + std::to_string(i), redlatch::LockOptions().lease(5s));
        std::unique_lock<redlatch::Lock> held(lock, std::try_to_lock);
        CHECK(held.owns_lock());
    }
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, redlatch::Client::cluster({}));

    redlatch::ClientOptions sentinel;
    sentinel.sentinel_password = env("REDLATCH_TEST_SENTINEL_PASSWORD");
    sentinel.sync_replicas = 1;
    redlatch::Client via_sentinel(env("REDLATCH_TEST_SENTINEL_URL"), sentinel);
    redlatch::Lock lock = via_sentinel.lock("cpp:sentinel", redlatch::LockOptions().lease(5s));
    CHECK(lock.try_lock());
    lock.release();

    auto seen = std::make_shared<std::vector<std::string>>();
    redlatch::ClientOptions warned;
    warned.on_warning = [seen](const std::string &kind, const std::string &message) {
        seen->push_back(kind + ": " + message);
    };
    redlatch::Lock evicting = redlatch::Client(env("REDLATCH_TEST_EVICTING_URL"), warned).lock("cpp:evict");
    CHECK(evicting.try_lock());  // the Lock outlives its Client and keeps the handler
    evicting.release();
    CHECK(seen->size() == 1);
    CHECK(!seen->empty() && (*seen)[0].rfind("eviction: ", 0) == 0);
}

int main() {
    const char *u = std::getenv("REDLATCH_TEST_URL");
    const char *q = std::getenv("REDLATCH_TEST_QUORUM_URLS");
    if (!u || !q) {
        std::cerr << "REDLATCH_TEST_URL / REDLATCH_TEST_QUORUM_URLS not set: run me through redlatch-fleet\n";
        return 2;
    }
    url = u;
    std::stringstream ss(q);
    for (std::string item; std::getline(ss, item, ',');) quorum_urls.push_back(item);

    RUN(test_lock_guard_holds_for_the_scope);
    RUN(test_unique_lock_try_lock_for_times_out_then_succeeds);
    RUN(test_scoped_lock_and_std_lock_take_both);
    RUN(test_exceptions_carry_the_status);
    RUN(test_rlock_reenters_and_moves);
    RUN(test_fencing_tokens_increase);
    RUN(test_on_lost_runs_the_handler);
    RUN(test_quorum_lock_guard);
    RUN(test_deployments_tls_cluster_sentinel_and_warnings);
    std::cout << passed << " passed, " << failed << " failed" << std::endl;
    return failed == 0 ? 0 : 1;
}
