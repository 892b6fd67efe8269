// redlatch: Redisson's semaphores and count-down latch in C++17 (Semaphore with SemaphoreGuard,
// PermitSemaphore with its movable Permit, CountDownLatch), over redlatch.h. Included by
// redlatch.hpp through redlatch_family.hpp (include redlatch.hpp); its conventions apply.
// SPDX-License-Identifier: MIT OR Apache-2.0
#ifndef REDLATCH_SEMAPHORES_HPP
#define REDLATCH_SEMAPHORES_HPP

#include "redlatch_family.hpp"

namespace redlatch {

/// A counting semaphore (Redisson's RSemaphore). Permits are not owned in Redis (a dead
/// holder's permits stay taken: see PermitSemaphore); this object counts what it acquired,
/// and releasing more than that throws NOT_OWNED. Destroying it gives back what it still
/// holds. Move-only; may be shared by threads (the count is the object's).
class Semaphore {
  public:
    /// Declares the permits the semaphore starts with: its first acquire, try_acquire or
    /// available() sets them when the semaphore does not exist yet (a count that exists is
    /// left as it is; redlatch_semaphore_set_initial_permits). Throws INVALID_ARGUMENT for 0
    /// or more than 2^31 - 1. Before the object is shared with other threads:
    /// `auto pool = client.semaphore("pool").initial_permits(3);`
    Semaphore &initial_permits(std::uint64_t permits) & {
        detail::check(redlatch_semaphore_set_initial_permits(handle_.get(), permits));
        return *this;
    }
    Semaphore &&initial_permits(std::uint64_t permits) && { return std::move(initial_permits(permits)); }
    /// Sets the number of permits when none is set yet; true when set. Throws
    /// INVALID_ARGUMENT for 0 or more than 2^31 - 1.
    bool try_set_permits(std::uint64_t permits) {
        bool set = false;
        detail::check(redlatch_semaphore_try_set_permits(handle_.get(), permits, &set));
        return set;
    }
    /// Takes `n` permits, waiting up to the semaphore's wait (throws NOT_ACQUIRED after it).
    void acquire(std::uint64_t n = 1) { detail::check(redlatch_semaphore_acquire(handle_.get(), n)); }
    /// One attempt to take `n` permits: true when taken.
    bool try_acquire(std::uint64_t n = 1) {
        bool acquired = false;
        detail::check(redlatch_semaphore_try_acquire(handle_.get(), n, &acquired));
        return acquired;
    }
    /// Waits up to `d` for `n` permits: true when taken, false when the time ran out.
    template <class Rep, class Period>
    bool try_acquire_for(const std::chrono::duration<Rep, Period> &d, std::uint64_t n = 1) {
        redlatch_status st = redlatch_semaphore_acquire_for(handle_.get(), n, detail::wait_millis(d));
        if (st == REDLATCH_NOT_ACQUIRED) {
            return false;
        }
        detail::check(st);
        return true;
    }
    /// Waits until `t` for `n` permits: true when taken, false when the time ran out.
    template <class Clock, class Duration>
    bool try_acquire_until(const std::chrono::time_point<Clock, Duration> &t, std::uint64_t n = 1) {
        return try_acquire_for(detail::until(t), n);
    }
    /// Gives back `n` of the permits this object acquired (NOT_OWNED beyond that).
    void release(std::uint64_t n = 1) { detail::check(redlatch_semaphore_release(handle_.get(), n)); }
    /// Permits available in Redis now.
    std::uint64_t available() const {
        std::uint64_t n = 0;
        detail::check(redlatch_semaphore_available(handle_.get(), &n));
        return n;
    }
    /// Permits acquired through this object and not released (no Redis call).
    std::uint64_t held() const {
        std::uint64_t n = 0;
        detail::check(redlatch_semaphore_held(handle_.get(), &n));
        return n;
    }
    redlatch_semaphore *native_handle() const noexcept { return handle_.get(); }

  private:
    friend class Client;
    Semaphore(redlatch_semaphore *s, std::shared_ptr<const void> state)
        : state_(std::move(state)), handle_(s) {}
    std::shared_ptr<const void> state_;
    std::unique_ptr<redlatch_semaphore, detail::Free<redlatch_semaphore, redlatch_semaphore_free>> handle_;
};

/// A scope guard for `n` permits of a Semaphore: acquires in the constructor (throws as
/// Semaphore::acquire), gives them back in the destructor (errors ignored; call release() to
/// see them; an unknown outcome is settled in the background and the permits leave the
/// Semaphore's count: redlatch_semaphore_release_final). Move-only.
class SemaphoreGuard {
  public:
    explicit SemaphoreGuard(Semaphore &semaphore, std::uint64_t n = 1) : semaphore_(&semaphore), n_(n) {
        semaphore.acquire(n);
    }
    SemaphoreGuard(SemaphoreGuard &&other) noexcept
        : semaphore_(std::exchange(other.semaphore_, nullptr)), n_(other.n_) {}
    SemaphoreGuard &operator=(SemaphoreGuard &&) = delete;
    SemaphoreGuard(const SemaphoreGuard &) = delete;
    SemaphoreGuard &operator=(const SemaphoreGuard &) = delete;
    ~SemaphoreGuard() {
        if (semaphore_ != nullptr) {
            (void)redlatch_semaphore_release_final(semaphore_->native_handle(), n_);
        }
    }
    /// Gives the permits back now; throws Error (then the guard still holds them).
    void release() {
        if (semaphore_ == nullptr) {
            throw Error(REDLATCH_NOT_OWNED, "NotOwned: this guard holds no permits",
                        REDLATCH_REASON_NEVER_HELD);
        }
        semaphore_->release(n_);
        semaphore_ = nullptr;
    }

  private:
    Semaphore *semaphore_;
    std::uint64_t n_;
};

/// One permit of a PermitSemaphore: movable RAII. Destroying it releases the permit when it is
/// still held (errors ignored; release() reports them).
class Permit {
  public:
    /// The permit's id: 32 lower-case hex digits (Redisson's format).
    std::string id() const { return redlatch_permit_id(handle_.get()); }
    /// True once it is known no longer held (its lease ran out unrenewed, or a renewal found it
    /// gone; see redlatch_permit_is_lost): release() then throws LOCK_LOST.
    bool is_lost() const {
        bool value = false;
        detail::check(redlatch_permit_is_lost(handle_.get(), &value));
        return value;
    }
    /// Releases now. Throws NOT_OWNED (already released, or its lease ran out), CONNECTION...
    void release() { detail::check(redlatch_permit_release(handle_.get())); }
    redlatch_permit *native_handle() const noexcept { return handle_.get(); }

  private:
    friend class PermitSemaphore;
    Permit(redlatch_permit *p, std::shared_ptr<const void> state) : state_(std::move(state)), handle_(p) {}
    std::shared_ptr<const void> state_;
    std::unique_ptr<redlatch_permit, detail::Free<redlatch_permit, redlatch_permit_free>> handle_;
};

/// A permit-expirable semaphore (Redisson's RPermitExpirableSemaphore): each permit has an id
/// and a lease, so a dead holder's permits come back. Move-only; may be shared by threads.
class PermitSemaphore {
  public:
    /// As Semaphore::initial_permits (redlatch_permit_semaphore_set_initial_permits).
    PermitSemaphore &initial_permits(std::uint64_t permits) & {
        detail::check(redlatch_permit_semaphore_set_initial_permits(handle_.get(), permits));
        return *this;
    }
    PermitSemaphore &&initial_permits(std::uint64_t permits) && { return std::move(initial_permits(permits)); }
    /// As Semaphore::try_set_permits.
    bool try_set_permits(std::uint64_t permits) {
        bool set = false;
        detail::check(redlatch_permit_semaphore_try_set_permits(handle_.get(), permits, &set));
        return set;
    }
    /// Takes a permit, waiting up to the semaphore's wait (throws NOT_ACQUIRED after it); no
    /// fixed lease: renewed by the watchdog while the Permit lives.
    Permit acquire() { return acquire_ms(0); }
    /// Takes a permit with a fixed lease: Redis gives it back `lease` after the acquire.
    template <class Rep, class Period>
    Permit acquire(const std::chrono::duration<Rep, Period> &lease) {
        return acquire_ms(positive(lease));
    }
    /// One attempt, no waiting: the permit, or empty when none is available.
    std::optional<Permit> try_acquire() { return try_acquire_ms(0); }
    template <class Rep, class Period>
    std::optional<Permit> try_acquire(const std::chrono::duration<Rep, Period> &lease) {
        return try_acquire_ms(positive(lease));
    }
    /// Waits up to `wait` for a permit (renewed by the watchdog; pass `lease` for a fixed
    /// one): the permit, or empty when the time ran out.
    template <class Rep, class Period>
    std::optional<Permit> try_acquire_for(const std::chrono::duration<Rep, Period> &wait) {
        return acquire_for_ms(0, detail::wait_millis(wait));
    }
    template <class Rep, class Period, class Rep2, class Period2>
    std::optional<Permit> try_acquire_for(const std::chrono::duration<Rep, Period> &wait,
                                          const std::chrono::duration<Rep2, Period2> &lease) {
        return acquire_for_ms(positive(lease), detail::wait_millis(wait));
    }
    /// Releases a permit by id (e.g. from another process). Throws NOT_OWNED for an unknown or
    /// expired id, INVALID_ARGUMENT for one that is not 32 hex digits.
    void release(const std::string &id) {
        detail::check(redlatch_permit_semaphore_release(handle_.get(), detail::c_str(id, "id")));
    }
    /// Permits available now (0 when none was set or the count is below zero).
    std::uint64_t available() const {
        std::uint64_t n = 0;
        detail::check(redlatch_permit_semaphore_available(handle_.get(), &n));
        return n;
    }
    redlatch_permit_semaphore *native_handle() const noexcept { return handle_.get(); }

  private:
    friend class Client;
    PermitSemaphore(redlatch_permit_semaphore *s, std::shared_ptr<const void> state)
        : state_(std::move(state)), handle_(s) {}

    template <class Rep, class Period>
    static std::uint64_t positive(const std::chrono::duration<Rep, Period> &lease) {
        std::uint64_t ms = detail::millis(lease);
        if (ms == 0) {  // 0 means "watchdog" in C
            throw Error(REDLATCH_INVALID_ARGUMENT, "InvalidArgument: lease must be greater than zero");
        }
        return ms;
    }
    Permit acquire_ms(std::uint64_t lease_ms) {
        redlatch_permit *p = nullptr;
        detail::check(redlatch_permit_semaphore_acquire(handle_.get(), lease_ms, &p));
        return Permit(p, state_);
    }
    std::optional<Permit> acquire_for_ms(std::uint64_t lease_ms, std::uint64_t wait_ms) {
        redlatch_permit *p = nullptr;
        redlatch_status st = redlatch_permit_semaphore_acquire_for(handle_.get(), lease_ms, wait_ms, &p);
        if (st == REDLATCH_NOT_ACQUIRED) {
            return std::nullopt;
        }
        detail::check(st);
        return Permit(p, state_);
    }
    std::optional<Permit> try_acquire_ms(std::uint64_t lease_ms) {
        redlatch_permit *p = nullptr;
        detail::check(redlatch_permit_semaphore_try_acquire(handle_.get(), lease_ms, &p));
        if (p == nullptr) {
            return std::nullopt;
        }
        return Permit(p, state_);
    }

    std::shared_ptr<const void> state_;
    std::unique_ptr<redlatch_permit_semaphore,
                    detail::Free<redlatch_permit_semaphore, redlatch_permit_semaphore_free>>
        handle_;
};

/// A count-down latch (Redisson's RCountDownLatch). Move-only; may be shared by threads.
class CountDownLatch {
  public:
    /// Sets the count when no latch is set; true when set (INVALID_ARGUMENT for 0).
    bool try_set_count(std::uint64_t count) {
        bool set = false;
        detail::check(redlatch_count_down_latch_try_set_count(handle_.get(), count, &set));
        return set;
    }
    /// Counts down by one; at zero every waiter wakes.
    void count_down() { detail::check(redlatch_count_down_latch_count_down(handle_.get())); }
    /// The current count (0 when open or never set).
    std::uint64_t count() const {
        std::uint64_t n = 0;
        detail::check(redlatch_count_down_latch_count(handle_.get(), &n));
        return n;
    }
    /// Waits until the count is zero, without limit.
    void wait() { (void)wait_ms(REDLATCH_WAIT_FOREVER); }
    /// Waits up to `d`: true when the count reached zero, false when the time ran out.
    template <class Rep, class Period>
    bool wait_for(const std::chrono::duration<Rep, Period> &d) {
        return wait_ms(detail::wait_millis(d));
    }
    /// Waits until `t`: true when the count reached zero, false when the time ran out.
    template <class Clock, class Duration>
    bool wait_until(const std::chrono::time_point<Clock, Duration> &t) {
        return wait_for(detail::until(t));
    }
    redlatch_count_down_latch *native_handle() const noexcept { return handle_.get(); }

  private:
    friend class Client;
    CountDownLatch(redlatch_count_down_latch *l, std::shared_ptr<const void> state)
        : state_(std::move(state)), handle_(l) {}
    bool wait_ms(std::uint64_t ms) {
        bool reached = false;
        detail::check(redlatch_count_down_latch_wait(handle_.get(), ms, &reached));
        return reached;
    }
    std::shared_ptr<const void> state_;
    std::unique_ptr<redlatch_count_down_latch,
                    detail::Free<redlatch_count_down_latch, redlatch_count_down_latch_free>>
        handle_;
};

inline Semaphore Client::semaphore(const std::string &name) const {
    redlatch_semaphore *s = nullptr;
    detail::check(redlatch_semaphore_new(handle_.get(), detail::c_str(name, "name"), REDLATCH_WAIT_FOREVER, &s));
    return Semaphore(s, state_);
}

inline Semaphore Client::semaphore(const std::string &name, std::chrono::milliseconds wait) const {
    redlatch_semaphore *s = nullptr;
    detail::check(redlatch_semaphore_new(handle_.get(), detail::c_str(name, "name"), detail::wait_millis(wait), &s));
    return Semaphore(s, state_);
}

inline PermitSemaphore Client::permit_semaphore(const std::string &name) const {
    redlatch_permit_semaphore *s = nullptr;
    detail::check(redlatch_permit_semaphore_new(handle_.get(), detail::c_str(name, "name"),
                                                REDLATCH_WAIT_FOREVER, &s));
    return PermitSemaphore(s, state_);
}

inline PermitSemaphore Client::permit_semaphore(const std::string &name, std::chrono::milliseconds wait) const {
    redlatch_permit_semaphore *s = nullptr;
    detail::check(redlatch_permit_semaphore_new(handle_.get(), detail::c_str(name, "name"),
                                                detail::wait_millis(wait), &s));
    return PermitSemaphore(s, state_);
}

inline CountDownLatch Client::count_down_latch(const std::string &name) const {
    redlatch_count_down_latch *l = nullptr;
    detail::check(redlatch_count_down_latch_new(handle_.get(), detail::c_str(name, "name"), &l));
    return CountDownLatch(l, state_);
}

}  // namespace redlatch

#endif  // REDLATCH_SEMAPHORES_HPP
