// The C++ suite of the rest of the family (redlatch_family.hpp): FairLock, RwLock with
// std::shared_lock / std::unique_lock, Semaphore with SemaphoreGuard, PermitSemaphore and its
// movable Permit, CountDownLatch timeouts, MultiLock with std::lock_guard, WouldDeadlock.
// Run through the fleet: target/debug/redlatch-fleet --quorum 3 -- ./test_family_cpp
// Prints one line per case and finally "N passed, N failed"; exits 1 if any case failed.
#include <redlatch.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

int passed = 0, failed = 0;
bool case_failed = false;
std::string url;

#define CHECK(cond)                                                                           \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            case_failed = true;                                                               \
            std::cerr << "  check failed at " << __FILE__ << ":" << __LINE__ << ": " #cond "\n"; \
        }                                                                                     \
    } while (0)

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

// ---- compile-time: the standard requirements ---------------------------------------------

template <class M, class = void>
struct is_shared_timed_lockable : std::false_type {};
template <class M>
struct is_shared_timed_lockable<
    M, std::void_t<decltype(std::declval<M &>().lock_shared()), decltype(std::declval<M &>().unlock_shared()),
                   decltype(bool(std::declval<M &>().try_lock_shared())),
                   decltype(bool(std::declval<M &>().try_lock_shared_for(1ms))),
                   decltype(bool(std::declval<M &>().try_lock_shared_until(Clock::now())))>> : std::true_type {};
static_assert(is_shared_timed_lockable<redlatch::ReadLock>::value, "ReadLock must be SharedTimedLockable");
static_assert(noexcept(std::declval<redlatch::ReadLock &>().unlock_shared()), "unlock_shared must not throw");
static_assert(std::is_base_of<redlatch::Lock, redlatch::FairLock>::value, "FairLock is a Lock");
static_assert(noexcept(std::declval<redlatch::MultiLock &>().unlock()), "unlock must not throw");
static_assert(std::is_nothrow_move_constructible<redlatch::Permit>::value, "Permit moves");
static_assert(!std::is_copy_constructible<redlatch::Permit>::value, "Permit is move-only");
static_assert(!std::is_copy_constructible<redlatch::Semaphore>::value, "Semaphore is move-only");
static_assert(!std::is_copy_constructible<redlatch::RwLock>::value, "RwLock is move-only");

// ---- cases -------------------------------------------------------------------------------

void test_fair_lock_guard_and_reentry() {
    redlatch::Client client(url);
    redlatch::FairLock lock = client.fair_lock("cppf:fair", redlatch::LockOptions().lease(10s));
    redlatch::Lock probe = client.fair_lock("cppf:fair", redlatch::LockOptions().owner_id(5));
    {
        std::lock_guard<redlatch::FairLock> held(lock);
        std::lock_guard<redlatch::FairLock> again(lock);
        CHECK(lock.hold_count() == 2);
        CHECK(!probe.try_lock());
    }
    CHECK(!probe.locked());
    CHECK(lock.kind() == REDLATCH_KIND_FAIR);
    CHECK(client.lock("cppf:kind").kind() == REDLATCH_KIND_LEASE);
    CHECK(client.rlock("cppf:kind").kind() == REDLATCH_KIND_REENTRANT);
    redlatch::FairLock moved = std::move(lock);
    CHECK(moved.kind() == REDLATCH_KIND_FAIR);
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, (void)lock.kind());
}

void test_rw_lock_shared_and_unique() {
    redlatch::Client client(url);
    redlatch::RwLock mine = client.rw_lock("cppf:rw");
    redlatch::RwLock other = client.rw_lock("cppf:rw", redlatch::LockOptions().owner_id(7));
    redlatch::RwLock writer = client.rw_lock("cppf:rw", redlatch::LockOptions().owner_id(8));
    {
        std::shared_lock<redlatch::ReadLock> r(mine.read());
        CHECK(r.owns_lock());
        std::shared_lock<redlatch::ReadLock> r2(other.read(), std::try_to_lock);  // readers share
        CHECK(r2.owns_lock());
        std::unique_lock<redlatch::Lock> w(writer.write(), std::defer_lock);
        CHECK(!w.try_lock_for(200ms));  // no writer beside readers
        // Upgrade: refused at once.
        auto t0 = Clock::now();
        EXPECT_ERROR(REDLATCH_WOULD_DEADLOCK, mine.write().lock());
        CHECK(Clock::now() - t0 < 1s);
    }
    CHECK(!mine.write().locked());
    {
        std::unique_lock<redlatch::RwLock> w(mine);  // the RwLock itself: lock() = write
        std::shared_lock<redlatch::RwLock> r(mine);  // the writer may read too
        CHECK(!other.read().try_lock_shared());
    }
    CHECK(!mine.read().locked());
    CHECK(mine.read().kind() == REDLATCH_KIND_READ && mine.write().kind() == REDLATCH_KIND_WRITE);
}

void test_semaphore_guard_and_permits() {
    redlatch::Client client(url);
    redlatch::Semaphore sem = client.semaphore("cppf:sem", 0ms);
    redlatch::Semaphore other = client.semaphore("cppf:sem", 0ms);
    CHECK(sem.try_set_permits(2));
    {
        redlatch::SemaphoreGuard two(sem, 2);
        CHECK(sem.held() == 2);
        CHECK(sem.available() == 0);
        CHECK(!other.try_acquire());
        EXPECT_ERROR(REDLATCH_NOT_ACQUIRED, other.acquire());
        CHECK(!other.try_acquire_for(200ms));
        CHECK(!other.try_acquire_until(Clock::now() + 100ms, 2));
        CHECK(!other.try_acquire_until(Clock::time_point::min(), 2));  // past: one try
        EXPECT_ERROR(REDLATCH_NOT_OWNED, other.release());
    }
    CHECK(sem.held() == 0);
    CHECK(sem.available() == 2);
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, sem.acquire(0));
}

void test_initial_permits_are_set_by_the_first_call() {
    redlatch::Client client(url);
    redlatch::Semaphore sem = client.semaphore("cppf:initial", 0ms).initial_permits(3);
    CHECK(sem.available() == 3);
    sem.acquire(2);
    redlatch::Semaphore other = client.semaphore("cppf:initial", 0ms);
    other.initial_permits(5);  // a count that exists is left as it is
    CHECK(!other.try_acquire(2));
    sem.release(2);
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, other.initial_permits(0));
    redlatch::PermitSemaphore permits = client.permit_semaphore("cppf:initial-permits", 0ms).initial_permits(1);
    redlatch::Permit p = permits.acquire(30s);
    CHECK(!permits.try_acquire().has_value());
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, permits.initial_permits(1ull << 31));
}

void test_permit_semaphore_permits_move_and_release() {
    redlatch::Client client(url);
    redlatch::PermitSemaphore sem = client.permit_semaphore("cppf:permits", 0ms);
    sem.try_set_permits(2);
    std::vector<redlatch::Permit> held;
    held.push_back(sem.acquire(30s));
    held.push_back(sem.acquire());
    CHECK(held[0].id().size() == 32 && held[0].id() != held[1].id());
    CHECK(!sem.try_acquire().has_value());
    CHECK(!sem.try_acquire_for(100ms).has_value());
    CHECK(sem.available() == 0);
    redlatch::Permit moved = std::move(held[0]);
    held.clear();  // the second permit's destructor releases it
    CHECK(sem.available() == 1);
    std::string id = moved.id();
    sem.release(id);
    EXPECT_ERROR(REDLATCH_NOT_OWNED, moved.release());
    EXPECT_ERROR(REDLATCH_NOT_OWNED, sem.release(id));
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, sem.release("xyz"));
    CHECK(sem.available() == 2);
    std::optional<redlatch::Permit> maybe = sem.try_acquire(10s);
    CHECK(maybe.has_value());
}

void test_count_down_latch_wait_for_and_wake() {
    redlatch::Client client(url);
    redlatch::CountDownLatch latch = client.count_down_latch("cppf:latch");
    CHECK(latch.try_set_count(2));
    CHECK(!latch.wait_for(100ms));
    CHECK(!latch.wait_until(Clock::now() + 100ms));
    CHECK(!latch.wait_until(std::chrono::system_clock::time_point::min()));  // past: one look
    std::thread counter([] {
        redlatch::Client c(url);
        redlatch::CountDownLatch l = c.count_down_latch("cppf:latch");
        std::this_thread::sleep_for(100ms);
        l.count_down();
        l.count_down();
    });
    auto t0 = Clock::now();
    CHECK(latch.wait_for(10s));
    CHECK(Clock::now() - t0 < 5s);
    counter.join();
    CHECK(latch.count() == 0);
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, latch.try_set_count(0));
}

void test_multi_lock_guard() {
    redlatch::Client client(url);
    redlatch::Lock a = client.lock("cppf:m:a", redlatch::LockOptions().lease(10s));
    redlatch::FairLock b = client.fair_lock("cppf:m:b", redlatch::LockOptions().lease(10s));
    redlatch::MultiLock both = client.multi_lock({a, b}, redlatch::LockOptions().wait(0ms));
    // Lease locks by name; "cppf:m:a" is both's lease member (a fair lock's hash under a lease
    // member's name would be a key conflict, as for a lease lock alone).
    redlatch::MultiLock by_name =
        client.multi_lock(std::vector<std::string>{"cppf:m:c", "cppf:m:a"}, redlatch::LockOptions().wait(0ms));
    {
        std::lock_guard<redlatch::MultiLock> held(both);
        CHECK(a.locked() && b.locked());
        CHECK(!by_name.try_lock());
        CHECK(!by_name.try_lock_for(100ms));
    }
    CHECK(!a.locked() && !b.locked());
    CHECK(by_name.try_lock_until(Clock::now() + 1s));
    by_name.unlock();
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, client.multi_lock(std::vector<std::string>{}));
    EXPECT_ERROR(REDLATCH_INVALID_ARGUMENT, client.multi_lock(std::vector<std::string>{"x", "x"}));
}

}  // namespace

int main() {
    const char *u = std::getenv("REDLATCH_TEST_URL");
    if (!u) {
        std::cerr << "REDLATCH_TEST_URL not set: run me through redlatch-fleet\n";
        return 2;
    }
    url = u;
    RUN(test_fair_lock_guard_and_reentry);
    RUN(test_rw_lock_shared_and_unique);
    RUN(test_semaphore_guard_and_permits);
    RUN(test_initial_permits_are_set_by_the_first_call);
    RUN(test_permit_semaphore_permits_move_and_release);
    RUN(test_count_down_latch_wait_for_and_wake);
    RUN(test_multi_lock_guard);
    std::cout << passed << " passed, " << failed << " failed" << std::endl;
    return failed == 0 ? 0 : 1;
}
