"""Acquire, release, context managers, inspection, reentrancy, force unlock."""

from __future__ import annotations

import re
import time

import pytest
import redis

import redlatch
from conftest import wait_until


def test_with_acquires_and_releases(client: redlatch.Client, r: redis.Redis, name: str) -> None:
    lock = client.lock(name, lease=5.0)
    assert not lock.locked()
    with lock as entered:
        assert entered is lock
        assert lock.locked()
        assert lock.owned()
        assert r.exists(name)
        ttl = lock.ttl()
        assert ttl is not None and 4.0 < ttl <= 5.0
        assert not lock.lost
    assert not lock.locked()
    assert lock.ttl() is None
    assert not lock.owned()
    assert not r.exists(name)


def test_acquire_release_returns_bool(client: redlatch.Client, name: str) -> None:
    lock = client.lock(name, lease=5.0)
    assert lock.acquire() is True
    lock.release()
    assert lock.acquire(blocking=False) is True
    lock.release()
    assert lock.acquire(timeout=0) is True
    lock.release()


def test_watchdog_mode_has_watchdog_lease(redis_url: str, name: str) -> None:
    client = redlatch.Client(redis_url, watchdog_timeout=2.0)
    lock = client.lock(name)
    with lock:
        ttl = lock.ttl()
        assert ttl is not None and 1.0 < ttl <= 2.0


def test_release_without_hold_is_not_owned(client: redlatch.Client, name: str) -> None:
    lock = client.lock(name)
    with pytest.raises(redlatch.NotOwnedError) as info:
        lock.release()
    assert info.value.code == 2
    with pytest.raises(redlatch.NotOwnedError):
        lock.extend(1.0)


def test_non_reentrant_reacquire_raises_at_once(client: redlatch.Client, name: str) -> None:
    lock = client.lock(name, lease=5.0)
    with lock:
        with pytest.raises(redlatch.LockError) as info:
            lock.acquire()
        assert info.value.code == 6
        with pytest.raises(redlatch.LockError):
            lock.acquire(blocking=False)
    assert not lock.locked()


def test_fencing_tokens_increase(client: redlatch.Client, name: str) -> None:
    lock = client.lock(name, lease=5.0, fenced=True)
    tokens = []
    for _ in range(3):
        with lock:
            tokens.append(lock.fencing_token)
    assert all(isinstance(t, int) for t in tokens)
    assert tokens == sorted(tokens) and len(set(tokens)) == 3
    assert lock.fencing_token is None
    assert client.lock(name + ":plain").fencing_token is None


def test_extend_replaces_ttl(client: redlatch.Client, name: str) -> None:
    lock = client.lock(name, lease=2.0)
    with lock:
        lock.extend(30.0)
        ttl = lock.ttl()
        assert ttl is not None and 29.0 < ttl <= 30.0
        lock.extend(10.0)
        ttl = lock.ttl()
        assert ttl is not None and ttl <= 10.0


def test_ttl_is_whole_milliseconds_in_seconds(client: redlatch.Client, r: redis.Redis, name: str) -> None:
    # Redis gives whole milliseconds: 5565 ms reads 5.565, not 5.5649999999999995 (user trial).
    lock = client.lock(name)
    for ms in range(5000, 5600, 3):  # some of them read as a long fraction before
        r.set(name, "t", px=ms)
        ttl = lock.ttl()
        assert ttl is not None and ttl == round(ttl, 3), ttl


def test_rlock_reenters_within_a_thread(client: redlatch.Client, r: redis.Redis, name: str) -> None:
    rl = client.rlock(name)
    with rl:
        with rl:
            assert rl.hold_count() == 2
            with client.rlock(name):  # another handle, same thread: re-enters too
                assert rl.hold_count() == 3
        assert rl.hold_count() == 1
        assert r.type(name) == b"hash"
    assert rl.hold_count() == 0
    assert not rl.locked()


def test_rlock_holds_share_the_hash_ttl(client: redlatch.Client, name: str) -> None:
    # Nested holds of one thread are counts in one hash with one TTL: re-entering, extending
    # or a partial release moves the validity of the outer hold as well (the outer acquire's
    # own 1 s lease has passed when it is released here).
    rl = client.rlock(name, lease=1.0)
    with rl:
        time.sleep(0.6)
        with rl:
            rl.extend(2.0)
            time.sleep(0.6)
        assert not rl.lost
        ttl = rl.ttl()
        assert ttl is not None and ttl > 0.3  # the partial release reset the TTL to 1 s
    assert not rl.locked()


def test_rlock_releases_through_any_handle(client: redlatch.Client, r: redis.Redis, name: str) -> None:
    a, b = client.rlock(name), client.rlock(name)
    a.acquire()
    b.acquire()
    assert a.hold_count() == 2
    a.release()
    a.release()  # the thread's second hold, taken through b
    assert not r.exists(name)
    with pytest.raises(redlatch.NotOwnedError):
        b.release()


def test_force_unlock(client: redlatch.Client, name: str) -> None:
    lock = client.lock(name, lease=10.0)
    lock.acquire()
    assert client.force_unlock(name) is True
    assert client.force_unlock(name) is False
    assert not lock.locked()
    with pytest.raises(redlatch.NotOwnedError):
        lock.release()


def test_properties_and_repr(client: redlatch.Client, name: str) -> None:
    lock = client.lock(name, lease=1.5, wait=0.5)
    assert lock.name == name
    assert not lock.reentrant
    assert client.rlock(name).reentrant
    assert name in repr(lock)
    host_port = client.node_labels[0]
    assert re.fullmatch(r"127\.0\.0\.1:\d+", host_port)
    assert repr(client) == f"<redlatch.Client {host_port}>"
    assert client.node_count == 1
    assert len(client.id) == 36
    assert isinstance(redlatch.__version__, str)


def test_sub_millisecond_lease_rounds_up(client: redlatch.Client, name: str) -> None:
    lock = client.lock(name, lease=0.0001)
    assert lock.acquire()  # a 1 ms lease: gone almost at once
    assert wait_until(lambda: not lock.locked(), timeout=1.0)


def test_exception_tree() -> None:
    assert issubclass(redlatch.NotAcquiredError, redlatch.LockError)
    assert issubclass(redlatch.NotAcquiredError, TimeoutError)
    assert issubclass(redlatch.NotOwnedError, redlatch.LockError)
    assert issubclass(redlatch.LockLostError, redlatch.NotOwnedError)
    assert issubclass(redlatch.QuorumError, redlatch.LockError)
    assert issubclass(redlatch.RedisConnectionError, redlatch.LockError)
    assert issubclass(redlatch.RedisConnectionError, ConnectionError)
    codes = {
        redlatch.NotAcquiredError: 1,
        redlatch.NotOwnedError: 2,
        redlatch.LockLostError: 3,
        redlatch.QuorumError: 4,
        redlatch.RedisConnectionError: 5,
    }
    for cls, code in codes.items():
        assert cls.code == code
        assert cls("x").code == code
    assert redlatch.LockError("x", code=7).code == 7
