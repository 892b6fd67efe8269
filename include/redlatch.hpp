// redlatch: Redis distributed locks - header-only C++17 wrapper over redlatch.h.
//
//   redlatch::Client client("redis://127.0.0.1:6379");
//   redlatch::Lock lock = client.lock("order:42", redlatch::LockOptions().lease(std::chrono::seconds(10)));
//   {
//       std::lock_guard<redlatch::Lock> held(lock);            // or std::unique_lock, std::scoped_lock
//       ...
//   }
//   std::unique_lock<redlatch::Lock> maybe(lock, std::chrono::milliseconds(500));  // try_lock_for
//   if (maybe) { ... }
//
// - Ownership is RAII: Client and Lock own their C handles (move-only); a Lock may outlive the
//   Client it came from. Destroying a Lock releases what is still held through it.
// - Errors throw redlatch::Error, which carries the redlatch_status (`status()`) and the
//   message of redlatch_last_error(). Bad input (including names with an embedded NUL) throws
//   with REDLATCH_INVALID_ARGUMENT.
// - redlatch::Lock meets Lockable and TimedLockable: lock() acquires (waiting up to the lock's
//   wait; throws NOT_ACQUIRED when it runs out), try_lock() makes one attempt, try_lock_for() /
//   try_lock_until() wait up to the given time and return false when it runs out, unlock()
//   releases. unlock() is noexcept as the standard requires (it runs in destructors), so it
//   ignores release errors (NOT_OWNED after an expiry, LOCK_LOST, network); call release() to
//   see them, and use on_lost() to learn about a loss while holding.
// - Threads: as in C, a Lock may be shared by threads like a std::mutex; each acquisition
//   belongs to the calling thread (or to LockOptions::owner_id). on_lost() itself must not race
//   with other on_lost() calls or the destructor.
// - Durations are rounded up to whole milliseconds; negative waits mean one try.
// - The rest of Redisson's family (redlatch_family.hpp and redlatch_semaphores.hpp, included
//   here): FairLock (Lockable), RwLock (read(): SharedLockable for std::shared_lock; write():
//   Lockable), MultiLock, Semaphore with SemaphoreGuard, PermitSemaphore with its movable
//   Permit, CountDownLatch.
// SPDX-License-Identifier: MIT OR Apache-2.0
#ifndef REDLATCH_HPP
#define REDLATCH_HPP

#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "redlatch.h"

namespace redlatch {

/// A failed redlatch call: the status code and the library's message.
class Error : public std::runtime_error {
  public:
    Error(redlatch_status status, const std::string &message,
          redlatch_reason reason = REDLATCH_REASON_NONE)
        : std::runtime_error(message), status_(status), reason_(reason) {}

    /// The status, equal to the core's ErrorKind code.
    redlatch_status status() const noexcept { return status_; }

    /// The status's stable name, e.g. "NotAcquired".
    const char *status_name() const noexcept { return redlatch_status_name(status_); }

    /// Why a hold is not ours (NOT_OWNED / LOCK_LOST: expired, taken, deleted, never held);
    /// REDLATCH_REASON_NONE for other errors.
    redlatch_reason reason() const noexcept { return reason_; }

    /// The reason's stable word ("expired", "taken", "deleted", "never_held"; "" for none).
    const char *reason_name() const noexcept { return redlatch_reason_name(reason_); }

  private:
    redlatch_status status_;
    redlatch_reason reason_;
};

namespace detail {

inline void check(redlatch_status status) {
    if (status != REDLATCH_OK) {
        throw Error(status, redlatch_last_error(), redlatch_last_error_reason());
    }
}

// A C string from `s`, refusing embedded NULs (which C would silently cut at).
inline const char *c_str(const std::string &s, const char *what) {
    if (s.find('\0') != std::string::npos) {
        throw Error(REDLATCH_INVALID_ARGUMENT,
                    std::string("InvalidArgument: ") + what + " contains a NUL byte");
    }
    return s.c_str();
}

// Whole milliseconds, rounded up; negative -> 0; saturates at UINT64_MAX - 1 (so an enormous
// duration is refused as too long by the library instead of meaning "forever"). A NaN
// duration (floating-point Rep) throws InvalidArgument: converting it would be undefined.
template <class Rep, class Period>
std::uint64_t millis(const std::chrono::duration<Rep, Period> &d) {
    using namespace std::chrono;
    if constexpr (std::is_floating_point_v<Rep>) {
        if (std::isnan(d.count())) {
            throw Error(REDLATCH_INVALID_ARGUMENT, "InvalidArgument: a duration is NaN");
        }
    }
    if (d <= d.zero()) {
        return 0;
    }
    if (duration_cast<duration<long double, std::milli>>(d).count() >= 1.8e19L) {
        return UINT64_MAX - 1;
    }
    auto ms = duration_cast<milliseconds>(d);
    if (ms < d) {
        ++ms;
    }
    return static_cast<std::uint64_t>(ms.count());
}

// A wait in whole ms for the C API: as millis(), but one beyond the longest the library takes
// (2^53 - 1 ms, about 285,000 years) is REDLATCH_WAIT_FOREVER, so that the TimedLockable
// spelling of "forever" (try_lock_for(milliseconds::max()), a time_point::max() deadline)
// waits instead of being refused.
template <class Rep, class Period>
std::uint64_t wait_millis(const std::chrono::duration<Rep, Period> &d) {
    std::uint64_t ms = millis(d);
    return ms > REDLATCH_MAX_DURATION_MS ? REDLATCH_WAIT_FOREVER : ms;
}

// The time left until deadline `t` on its clock (zero or less once it passed), in ms as a
// long double: `t - Clock::now()` overflows for far deadlines (a C++ user trial of stop 46:
// try_lock_until(time_point::min()) wrapped around to a wait of centuries and blocked).
template <class Clock, class Duration>
std::chrono::duration<long double, std::milli> until(const std::chrono::time_point<Clock, Duration> &t) {
    using ms = std::chrono::duration<long double, std::milli>;
    const auto now = Clock::now();
    return std::chrono::duration_cast<ms>(t.time_since_epoch()) -
           std::chrono::duration_cast<ms>(now.time_since_epoch());
}

// A ClientOptions duration in whole ms: zero is the library default (the C struct's 0); a
// negative one throws InvalidArgument (it used to become the default without a word).
template <class Rep, class Period>
std::uint64_t option_millis(const std::chrono::duration<Rep, Period> &d, const char *what) {
    if (d < d.zero()) {
        throw Error(REDLATCH_INVALID_ARGUMENT,
                    std::string("InvalidArgument: ") + what + " must not be negative (zero means the default)");
    }
    return millis(d);
}

}  // namespace detail

/// TLS settings of rediss:// URLs; an empty string means "not set". Without any, a rediss://
/// URL is verified against the system roots. A wrong CA, a certificate not valid for the
/// name, an expired one or a refused client certificate throws CONNECTION saying which.
struct TlsOptions {
    std::string ca_file;      ///< PEM file of CA certificates to trust instead of the system roots
    std::string ca_pem;       ///< ... or the same as PEM text (not both)
    std::string cert_file;    ///< mutual TLS: client certificate chain (PEM file), with key_file
    std::string key_file;     ///< its private key (PEM file)
    std::string cert_pem;     ///< the client certificate chain as PEM text, with key_pem
    std::string key_pem;      ///< its private key as PEM text
    std::string server_name;  ///< name to verify instead of the URL's host (single nodes, Sentinel)
    bool insecure = false;    ///< accept any certificate: encrypted, not authenticated (never the default)
};

/// Client settings; zero (or an empty string) means the library default; a negative duration
/// throws InvalidArgument when the client is made.
struct ClientOptions {
    /// Called with (kind, message) for each deployment warning (e.g. kind "eviction": a
    /// maxmemory-policy that may evict lock keys), once per node, on a redlatch runtime
    /// thread (the rules of Lock::on_lost apply). Empty: the library prints them on stderr.
    using WarningHandler = std::function<void(const std::string &kind, const std::string &message)>;

    std::chrono::milliseconds watchdog_timeout{0};  ///< default 30 s
    std::chrono::milliseconds network_timeout{0};   ///< default 3 s
    std::chrono::milliseconds node_timeout{0};      ///< quorum only; default min(lease/20, 250 ms)
    TlsOptions tls;                                 ///< rediss:// only
    std::string sentinel_username;                  ///< the sentinels' ACL user (redis+sentinel://)
    std::string sentinel_password;                  ///< the sentinels' password
    /// Replicas that must confirm each grant and renewal (WAIT; Redisson's
    /// checkLockSyncedSlaves): too few make lock() throw NOT_ACQUIRED (the grant rolled back)
    /// and a renewal not count (the hold is reported lost). 0 = off.
    unsigned sync_replicas = 0;
    std::chrono::milliseconds sync_replicas_timeout{0};  ///< each WAIT's bound; default 1 s
    WarningHandler on_warning;

    /// The C struct; its strings point into this object (valid while it lives, unchanged).
    redlatch_client_options to_c() const {
        redlatch_client_options o{};
        o.watchdog_timeout_ms = detail::option_millis(watchdog_timeout, "watchdog_timeout");
        o.network_timeout_ms = detail::option_millis(network_timeout, "network_timeout");
        o.node_timeout_ms = detail::option_millis(node_timeout, "node_timeout");
        o.tls_ca_file = opt(tls.ca_file, "tls.ca_file");
        o.tls_ca_pem = opt(tls.ca_pem, "tls.ca_pem");
        o.tls_cert_file = opt(tls.cert_file, "tls.cert_file");
        o.tls_key_file = opt(tls.key_file, "tls.key_file");
        o.tls_cert_pem = opt(tls.cert_pem, "tls.cert_pem");
        o.tls_key_pem = opt(tls.key_pem, "tls.key_pem");
        o.tls_server_name = opt(tls.server_name, "tls.server_name");
        o.tls_insecure = tls.insecure;
        o.sentinel_username = opt(sentinel_username, "sentinel_username");
        o.sentinel_password = opt(sentinel_password, "sentinel_password");
        o.sync_replicas = sync_replicas;
        o.sync_replicas_timeout_ms = detail::option_millis(sync_replicas_timeout, "sync_replicas_timeout");
        return o;
    }

  private:
    static const char *opt(const std::string &s, const char *what) {
        return s.empty() ? nullptr : detail::c_str(s, what);
    }
};

/// Lock settings, builder style: LockOptions().lease(10s).wait(5s).fenced().
class LockOptions {
  public:
    LockOptions() : o_(redlatch_lock_options_default()) {}

    /// Fixed lease (no renewal). Without it: watchdog mode.
    template <class Rep, class Period>
    LockOptions &lease(const std::chrono::duration<Rep, Period> &d) {
        o_.lease_ms = detail::millis(d);
        if (o_.lease_ms == 0) {  // never "watchdog mode", which is what 0 means in C
            throw Error(REDLATCH_INVALID_ARGUMENT, "InvalidArgument: lease must be greater than zero");
        }
        return *this;
    }
    /// How long lock() waits (zero or negative: one try; beyond 2^53 - 1 ms: forever).
    /// Default: forever.
    template <class Rep, class Period>
    LockOptions &wait(const std::chrono::duration<Rep, Period> &d) {
        o_.wait_ms = detail::wait_millis(d);
        return *this;
    }
    LockOptions &wait_forever() {
        o_.wait_ms = REDLATCH_WAIT_FOREVER;
        return *this;
    }
    /// Fencing tokens (single-node clients only).
    /// Fenced locks: the counter key expires `ttl` after the last fenced acquire (default: it
    /// persists). Hazard: tokens then start again at 1; see redlatch_lock_options.fence_ttl_ms.
    /// Zero or negative throws InvalidArgument (in C, 0 means "persists": never by accident).
    template <class Rep, class Period>
    LockOptions &fence_ttl(const std::chrono::duration<Rep, Period> &ttl) {
        o_.fence_ttl_ms = detail::millis(ttl);
        if (o_.fence_ttl_ms == 0) {
            throw Error(REDLATCH_INVALID_ARGUMENT, "InvalidArgument: fence_ttl must be greater than zero");
        }
        return *this;
    }
    LockOptions &fenced(bool on = true) {
        o_.fenced = on;
        return *this;
    }
    /// Holds belong to this owner (1..REDLATCH_MAX_OWNER_ID) instead of the calling thread.
    LockOptions &owner_id(std::uint64_t id) {
        o_.owner_id = id;
        return *this;
    }

    const redlatch_lock_options &c_options() const noexcept { return o_; }

  private:
    redlatch_lock_options o_;
};

class Client;
class FairLock;
class ReadLock;
class RwLock;
class Semaphore;
class PermitSemaphore;
class CountDownLatch;
class MultiLock;

/// A lock handle: Lockable and TimedLockable. Move-only.
class Lock {
  public:
    using LostHandler = std::function<void(const std::string &name)>;

    Lock(Lock &&other) noexcept = default;
    Lock &operator=(Lock &&other) noexcept {
        if (this != &other) {
            handle_ = std::move(other.handle_);  // frees our handle first: no more callbacks
            on_lost_ = std::move(other.on_lost_);
            client_state_ = std::move(other.client_state_);
        }
        return *this;
    }
    Lock(const Lock &) = delete;
    Lock &operator=(const Lock &) = delete;
    ~Lock() = default;  // handle_ (declared last) is freed before on_lost_ and client_state_

    /// Acquires, waiting up to the lock's wait. Throws Error (NOT_ACQUIRED when it runs out).
    void lock() { detail::check(redlatch_lock_acquire(handle_.get())); }

    /// One attempt: true when acquired.
    bool try_lock() {
        bool acquired = false;
        detail::check(redlatch_lock_try_acquire(handle_.get(), &acquired));
        return acquired;
    }

    /// Waits up to `d`: true when acquired, false when the time ran out. Beyond 2^53 - 1 ms
    /// (milliseconds::max(), a time_point::max() deadline) it waits until acquired.
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d) {
        redlatch_status st = redlatch_lock_acquire_for(handle_.get(), detail::wait_millis(d));
        if (st == REDLATCH_NOT_ACQUIRED) {
            return false;
        }
        detail::check(st);
        return true;
    }

    /// Waits until `t`: true when acquired, false when the time ran out.
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t) {
        return try_lock_for(detail::until(t));
    }

    /// Releases the calling thread's most recent hold, ignoring errors (see the file comment).
    void unlock() noexcept { (void)redlatch_lock_release_final(handle_.get()); }

    /// Releases the calling thread's most recent hold. Throws Error (NOT_OWNED, LOCK_LOST, ...);
    /// after CONNECTION (outcome unknown) the hold stays and release() may be called again.
    void release() { detail::check(redlatch_lock_release(handle_.get())); }

    /// Resets the remaining lease to `lease` (replace, never add). In watchdog mode the next
    /// renewal sets it back to the watchdog timeout (meant for fixed leases).
    template <class Rep, class Period>
    void extend(const std::chrono::duration<Rep, Period> &lease) {
        detail::check(redlatch_lock_extend(handle_.get(), detail::millis(lease)));
    }

    /// Fencing token of the current hold (fenced locks only).
    std::uint64_t fencing_token() const {
        std::uint64_t token = 0;
        detail::check(redlatch_lock_fencing_token(handle_.get(), &token));
        return token;
    }

    /// Whether the current hold is still ours (asks Redis).
    bool owned() const {
        bool v = false;
        detail::check(redlatch_lock_owned(handle_.get(), &v));
        return v;
    }

    /// The lock's kind: REDLATCH_KIND_LEASE, _REENTRANT, _FAIR, _READ or _WRITE (answered
    /// locally, nothing is sent). Throws Error (INVALID_ARGUMENT) on a moved-from Lock.
    redlatch_kind kind() const {
        int k = redlatch_lock_kind(handle_.get());
        if (k < 0) {
            throw Error(REDLATCH_INVALID_ARGUMENT, "InvalidArgument: lock is NULL (moved from)");
        }
        return static_cast<redlatch_kind>(k);
    }

    /// Whether the current hold was seen lost.
    bool is_lost() const {
        bool v = false;
        detail::check(redlatch_lock_is_lost(handle_.get(), &v));
        return v;
    }

    /// Whether anyone holds the lock.
    bool locked() const {
        bool v = false;
        detail::check(redlatch_lock_is_locked(handle_.get(), &v));
        return v;
    }

    /// Remaining lease of whoever holds it; empty when free.
    std::optional<std::chrono::milliseconds> ttl() const {
        bool held = false;
        std::uint64_t ms = 0;
        detail::check(redlatch_lock_ttl(handle_.get(), &held, &ms));
        if (!held) {
            return std::nullopt;
        }
        return std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(ms));
    }

    /// Reentrant locks: this owner's hold count (lease locks: 0).
    std::uint64_t hold_count() const {
        std::uint64_t n = 0;
        detail::check(redlatch_lock_hold_count(handle_.get(), &n));
        return n;
    }

    /// Calls `handler(name)` when a hold made through this lock is lost. It runs on a redlatch
    /// runtime thread, must return quickly, must not call into redlatch and must not destroy
    /// this Lock; exceptions it throws are swallowed. An empty function removes the handler;
    /// once on_lost() returns, the previous handler is not running and will not run again.
    void on_lost(LostHandler handler) {
        if (!handler) {
            detail::check(redlatch_lock_set_lost_callback(handle_.get(), nullptr, nullptr));
            on_lost_.reset();
            return;
        }
        auto fresh = std::make_unique<LostHandler>(std::move(handler));
        detail::check(redlatch_lock_set_lost_callback(handle_.get(), &Lock::trampoline, fresh.get()));
        on_lost_ = std::move(fresh);  // the old handler is no longer running or called
    }

    /// The C handle (still owned by this object).
    redlatch_lock *native_handle() const noexcept { return handle_.get(); }

  private:
    friend class Client;
    friend class RwLock;
    friend class MultiLock;
    struct Free {
        void operator()(redlatch_lock *l) const noexcept { redlatch_lock_free(l); }
    };

    Lock(redlatch_lock *handle, std::shared_ptr<const void> client_state)
        : client_state_(std::move(client_state)), handle_(handle) {}

    static void trampoline(void *user_data, const char *name) noexcept {
        try {
            (*static_cast<LostHandler *>(user_data))(std::string(name));
        } catch (...) {
        }
    }

    // The client's warning handler: a lock keeps the connections (which may still warn) alive.
    std::shared_ptr<const void> client_state_;
    std::unique_ptr<LostHandler> on_lost_;
    std::unique_ptr<redlatch_lock, Free> handle_;
};

/// Connection(s) to Redis: one node (or a Sentinel master), a quorum of independent nodes, or
/// a Redis Cluster. Move-only; thread-safe.
class Client {
  public:
    /// Connects to the deployment `url` names: one node ("redis://127.0.0.1:6379",
    /// "rediss://..." with ClientOptions::tls), a Cluster ("redis+cluster://h1:7000,h2:7001")
    /// or a Sentinel master ("redis+sentinel://h1:26379,h2:26379/mymaster").
    explicit Client(const std::string &url, const ClientOptions &options = ClientOptions()) {
        auto handler = warning_handler(options);
        redlatch_client_options o = to_c(options, handler);
        redlatch_client *c = nullptr;
        detail::check(redlatch_client_new(detail::c_str(url, "url"), &o, &c));
        handle_.reset(c);
        state_ = std::move(handler);
    }

    /// Connects to independent nodes for Redlock quorum locking.
    static Client quorum(const std::vector<std::string> &urls,
                         const ClientOptions &options = ClientOptions()) {
        return from_list(urls, options, "a quorum client", &redlatch_client_new_quorum);
    }

    /// Connects to a Redis Cluster through any of its nodes (seed URLs); slot moves and
    /// failovers are followed.
    static Client cluster(const std::vector<std::string> &urls,
                          const ClientOptions &options = ClientOptions()) {
        return from_list(urls, options, "a Cluster client", &redlatch_client_new_cluster);
    }

    /// A lease lock (not reentrant).
    Lock lock(const std::string &name, const LockOptions &options = LockOptions()) const {
        redlatch_lock *l = nullptr;
        detail::check(redlatch_lock_new(handle_.get(), detail::c_str(name, "name"),
                                        &options.c_options(), &l));
        return Lock(l, state_);
    }

    /// A reentrant lock (per calling thread, or per LockOptions::owner_id).
    Lock rlock(const std::string &name, const LockOptions &options = LockOptions()) const {
        redlatch_lock *l = nullptr;
        detail::check(redlatch_rlock_new(handle_.get(), detail::c_str(name, "name"),
                                         &options.c_options(), &l));
        return Lock(l, state_);
    }

    /// A fair lock (Redisson's RFairLock): reentrant like rlock(), waiters served in FIFO order.
    FairLock fair_lock(const std::string &name, const LockOptions &options = LockOptions()) const;

    /// A read/write lock (Redisson's RReadWriteLock); `options` apply to both sides.
    RwLock rw_lock(const std::string &name, const LockOptions &options = LockOptions()) const;

    /// A counting semaphore (Redisson's RSemaphore); acquire() waits up to `wait` (default
    /// forever; zero: one try).
    Semaphore semaphore(const std::string &name) const;
    Semaphore semaphore(const std::string &name, std::chrono::milliseconds wait) const;

    /// A permit-expirable semaphore (Redisson's RPermitExpirableSemaphore); acquire() waits
    /// up to `wait` (default forever; zero: one try).
    PermitSemaphore permit_semaphore(const std::string &name) const;
    PermitSemaphore permit_semaphore(const std::string &name, std::chrono::milliseconds wait) const;

    /// A count-down latch (Redisson's RCountDownLatch).
    CountDownLatch count_down_latch(const std::string &name) const;

    /// Several locks of this client taken as one: all or nothing, in one sorted order.
    /// Only LockOptions::lease and wait apply.
    MultiLock multi_lock(const std::vector<std::reference_wrapper<const Lock>> &locks,
                         const LockOptions &options = LockOptions()) const;

    /// A multi-lock of lease locks by name.
    MultiLock multi_lock(const std::vector<std::string> &names,
                         const LockOptions &options = LockOptions()) const;

    /// Admin: deletes the lock whatever its owner; true when one was deleted.
    bool force_unlock(const std::string &name) const {
        bool deleted = false;
        detail::check(redlatch_force_unlock(handle_.get(), detail::c_str(name, "name"), &deleted));
        return deleted;
    }

    /// The C handle (still owned by this object).
    redlatch_client *native_handle() const noexcept { return handle_.get(); }

  private:
    struct Free {
        void operator()(redlatch_client *c) const noexcept { redlatch_client_free(c); }
    };

    using Handler = ClientOptions::WarningHandler;
    using NewFromList = redlatch_status (*)(const char *const *, size_t, const redlatch_client_options *,
                                            redlatch_client **);

    Client(redlatch_client *c, std::shared_ptr<const void> state) : state_(std::move(state)), handle_(c) {}

    static std::shared_ptr<const Handler> warning_handler(const ClientOptions &options) {
        return options.on_warning ? std::make_shared<const Handler>(options.on_warning) : nullptr;
    }

    static redlatch_client_options to_c(const ClientOptions &options, const std::shared_ptr<const Handler> &h) {
        redlatch_client_options o = options.to_c();
        if (h) {
            o.on_warning = &Client::warning_trampoline;
            o.warning_user_data = const_cast<Handler *>(h.get());
        }
        return o;
    }

    static void warning_trampoline(void *user_data, const char *kind, const char *message) noexcept {
        try {
            (*static_cast<const Handler *>(user_data))(std::string(kind), std::string(message));
        } catch (...) {
        }
    }

    static Client from_list(const std::vector<std::string> &urls, const ClientOptions &options,
                            const char *what, NewFromList make) {
        if (urls.empty()) {  // (an empty vector's data() is NULL, which C reports as such)
            throw Error(REDLATCH_INVALID_ARGUMENT,
                        std::string("InvalidArgument: ") + what + " needs at least one URL");
        }
        std::vector<const char *> ptrs;
        ptrs.reserve(urls.size());
        for (const auto &u : urls) {
            ptrs.push_back(detail::c_str(u, "url"));
        }
        auto handler = warning_handler(options);
        redlatch_client_options o = to_c(options, handler);
        redlatch_client *c = nullptr;
        detail::check(make(ptrs.data(), ptrs.size(), &o, &c));
        return Client(c, std::move(handler));
    }

    // The warning handler, shared with every Lock (kept until the last of them is gone).
    std::shared_ptr<const void> state_;
    std::unique_ptr<redlatch_client, Free> handle_;
};

/// The library version at run time (compare with REDLATCH_VERSION_STRING).
inline std::string version() { return redlatch_version(); }

}  // namespace redlatch

// The rest of the family: FairLock, RwLock, Semaphore, PermitSemaphore, CountDownLatch,
// MultiLock, and the Client functions that make them.
#include "redlatch_family.hpp"

#endif  // REDLATCH_HPP
