// redlatch: the rest of Redisson's lock family in C++17, over redlatch.h: the fair, read/write
// and multi-locks here, the semaphores and the latch in redlatch_semaphores.hpp. Included by
// redlatch.hpp (include that one); the conventions of redlatch.hpp apply (move-only RAII
// handles, redlatch::Error exceptions, durations rounded up to whole ms).
//
//   redlatch::FairLock fair = client.fair_lock("queue");        // Lockable, FIFO waiters
//   redlatch::RwLock rw = client.rw_lock("config");
//   { std::shared_lock<redlatch::ReadLock> r(rw.read()); ... }  // many readers
//   { std::unique_lock<redlatch::Lock> w(rw.write()); ... }     // one writer
//   redlatch::Semaphore pool = client.semaphore("pool");
//   { redlatch::SemaphoreGuard g(pool, 2); ... }                 // two permits, given back
//   redlatch::Permit p = client.permit_semaphore("slots").acquire(std::chrono::seconds(30));
//   client.count_down_latch("ready").wait_for(std::chrono::seconds(5));
//   redlatch::MultiLock both = client.multi_lock({a, b});       // Lockable, all or nothing
//
// SPDX-License-Identifier: MIT OR Apache-2.0
#ifndef REDLATCH_FAMILY_HPP
#define REDLATCH_FAMILY_HPP

#include "redlatch.hpp"

namespace redlatch {

/// A fair lock (Redisson's RFairLock): a reentrant Lock whose waiters are served strictly in
/// the order they queued, across processes and languages. try_lock() never queues.
class FairLock : public Lock {
  private:
    friend class Client;
    explicit FairLock(Lock &&lock) : Lock(std::move(lock)) {}
};

/// The read side of an RwLock: SharedLockable (lock_shared / try_lock_shared /
/// unlock_shared, so std::shared_lock works) and SharedTimedLockable; also a Lock (lock()
/// takes a read hold too). Reentrant per owner.
class ReadLock : public Lock {
  public:
    void lock_shared() { lock(); }
    bool try_lock_shared() { return try_lock(); }
    template <class Rep, class Period>
    bool try_lock_shared_for(const std::chrono::duration<Rep, Period> &d) {
        return try_lock_for(d);
    }
    template <class Clock, class Duration>
    bool try_lock_shared_until(const std::chrono::time_point<Clock, Duration> &t) {
        return try_lock_until(t);
    }
    void unlock_shared() noexcept { unlock(); }

  private:
    friend class RwLock;
    explicit ReadLock(Lock &&lock) : Lock(std::move(lock)) {}
};

/// A read/write lock (Redisson's RReadWriteLock): many readers or one writer. read() is a
/// ReadLock, write() a Lock; both act for the calling thread (or LockOptions::owner_id), one
/// owner for both sides: the writer may also take the read lock, and a thread holding a read
/// lock that asks for the write lock gets Error REDLATCH_WOULD_DEADLOCK at once (Redisson
/// would wait forever). The RwLock itself is a SharedMutex: lock()/unlock() are the write
/// side, lock_shared()/unlock_shared() the read side. Move-only.
class RwLock {
  public:
    ReadLock &read() noexcept { return read_; }
    Lock &write() noexcept { return write_; }

    void lock() { write_.lock(); }
    bool try_lock() { return write_.try_lock(); }
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d) {
        return write_.try_lock_for(d);
    }
    void unlock() noexcept { write_.unlock(); }
    void lock_shared() { read_.lock_shared(); }
    bool try_lock_shared() { return read_.try_lock_shared(); }
    template <class Rep, class Period>
    bool try_lock_shared_for(const std::chrono::duration<Rep, Period> &d) {
        return read_.try_lock_shared_for(d);
    }
    void unlock_shared() noexcept { read_.unlock_shared(); }

  private:
    friend class Client;
    RwLock(redlatch_lock *read, redlatch_lock *write, const std::shared_ptr<const void> &state)
        : read_(Lock(read, state)), write_(Lock(write, state)) {}

    ReadLock read_;
    Lock write_;
};

namespace detail {
template <class T, void (*F)(T *)>
struct Free {
    void operator()(T *p) const noexcept { F(p); }
};
}  // namespace detail

/// Several locks taken as one (Redisson's RedissonMultiLock): TimedLockable. lock() takes every
/// member or none (waiting up to the wait; throws NOT_ACQUIRED after it), in one sorted order;
/// unlock() releases them all (errors ignored; release() reports them). One hold at a time.
class MultiLock {
  public:
    void lock() { detail::check(redlatch_multi_lock_acquire(handle_.get())); }
    bool try_lock() {
        bool acquired = false;
        detail::check(redlatch_multi_lock_try_acquire(handle_.get(), &acquired));
        return acquired;
    }
    /// Waits up to `d`: true when every member was taken, false when the time ran out.
    template <class Rep, class Period>
    bool try_lock_for(const std::chrono::duration<Rep, Period> &d) {
        redlatch_status st = redlatch_multi_lock_acquire_for(handle_.get(), detail::wait_millis(d));
        if (st == REDLATCH_NOT_ACQUIRED) {
            return false;
        }
        detail::check(st);
        return true;
    }
    template <class Clock, class Duration>
    bool try_lock_until(const std::chrono::time_point<Clock, Duration> &t) {
        return try_lock_for(detail::until(t));
    }
    void unlock() noexcept { (void)redlatch_multi_lock_release(handle_.get()); }
    void release() { detail::check(redlatch_multi_lock_release(handle_.get())); }
    redlatch_multi_lock *native_handle() const noexcept { return handle_.get(); }

  private:
    friend class Client;
    MultiLock(redlatch_multi_lock *m, std::shared_ptr<const void> state)
        : state_(std::move(state)), handle_(m) {}
    std::shared_ptr<const void> state_;
    std::unique_ptr<redlatch_multi_lock, detail::Free<redlatch_multi_lock, redlatch_multi_lock_free>> handle_;
};

inline FairLock Client::fair_lock(const std::string &name, const LockOptions &options) const {
    redlatch_lock *l = nullptr;
    detail::check(redlatch_fair_lock_new(handle_.get(), detail::c_str(name, "name"), &options.c_options(), &l));
    return FairLock(Lock(l, state_));
}

inline RwLock Client::rw_lock(const std::string &name, const LockOptions &options) const {
    redlatch_rw_lock *raw = nullptr;
    detail::check(redlatch_rw_lock_new(handle_.get(), detail::c_str(name, "name"), &raw));
    std::unique_ptr<redlatch_rw_lock, detail::Free<redlatch_rw_lock, redlatch_rw_lock_free>> rw(raw);
    redlatch_lock *read = nullptr;
    detail::check(redlatch_rw_lock_read(rw.get(), &options.c_options(), &read));
    redlatch_lock *write = nullptr;
    redlatch_status st = redlatch_rw_lock_write(rw.get(), &options.c_options(), &write);
    if (st != REDLATCH_OK) {
        redlatch_lock_free(read);
        detail::check(st);
    }
    return RwLock(read, write, state_);  // the sides outlive the read/write handle
}

inline MultiLock Client::multi_lock(const std::vector<std::reference_wrapper<const Lock>> &locks,
                                    const LockOptions &options) const {
    std::vector<const redlatch_lock *> handles;
    handles.reserve(locks.size());
    for (const Lock &l : locks) {
        handles.push_back(l.native_handle());
    }
    redlatch_multi_lock *m = nullptr;
    detail::check(redlatch_multi_lock_new(handle_.get(), handles.empty() ? nullptr : handles.data(),
                                          handles.size(), &options.c_options(), &m));
    return MultiLock(m, state_);
}

inline MultiLock Client::multi_lock(const std::vector<std::string> &names, const LockOptions &options) const {
    std::vector<const char *> ptrs;
    ptrs.reserve(names.size());
    for (const auto &n : names) {
        ptrs.push_back(detail::c_str(n, "name"));
    }
    redlatch_multi_lock *m = nullptr;
    detail::check(redlatch_multi_lock_new_names(handle_.get(), ptrs.empty() ? nullptr : ptrs.data(),
                                                ptrs.size(), &options.c_options(), &m));
    return MultiLock(m, state_);
}

}  // namespace redlatch

#include "redlatch_semaphores.hpp"

#endif  // REDLATCH_FAMILY_HPP
