"""Waits: timeouts, one-try, forever, and interrupting a blocking wait."""

from __future__ import annotations

import signal
import threading
import time

import pytest
import redis

import redlatch
from conftest import numsub, wait_until


@pytest.fixture
def held(redis_url: str, name: str):  # type: ignore[no-untyped-def]
    """The lock `name`, held by another client for the test's duration."""
    lock = redlatch.Client(redis_url).lock(name, lease=30.0)
    assert lock.acquire()
    yield lock
    lock.release()


def test_timeout_returns_false_after_the_wait(client: redlatch.Client, held: redlatch.Lock, name: str) -> None:
    t0 = time.monotonic()
    assert client.lock(name).acquire(timeout=0.3) is False
    assert 0.25 <= time.monotonic() - t0 < 2.0


def test_lock_wait_applies_to_with(client: redlatch.Client, held: redlatch.Lock, name: str) -> None:
    t0 = time.monotonic()
    with pytest.raises(redlatch.NotAcquiredError) as info:
        with client.lock(name, wait=0.2):
            pass  # pragma: no cover
    assert 0.15 <= time.monotonic() - t0 < 2.0
    assert isinstance(info.value, TimeoutError)
    assert info.value.code == 1
    # The core's words, as Node and C give them (a user trial of stop 41 compared them).
    assert str(info.value) == f'lock "{name}" is held by another owner; wait ran out (0.2 s)'


def test_one_try(client: redlatch.Client, held: redlatch.Lock, name: str) -> None:
    t0 = time.monotonic()
    assert client.lock(name).acquire(blocking=False) is False
    assert client.lock(name, wait=0).acquire() is False
    assert client.lock(name).acquire(timeout=0) is False
    assert time.monotonic() - t0 < 1.0


def test_timeout_minus_one_waits_forever(client: redlatch.Client, name: str) -> None:
    holder = client.lock(name, lease=30.0)
    holder.acquire()
    result = []
    waiter = threading.Thread(target=lambda: result.append(client.lock(name, wait=0.01).acquire(timeout=-1)))
    waiter.start()
    time.sleep(0.4)
    assert waiter.is_alive()  # the lock's own 0.01 s wait is overridden by -1
    holder.release()
    waiter.join(10)
    assert result == [True]


def test_waiter_woken_promptly_on_release(client: redlatch.Client, name: str) -> None:
    holder = client.lock(name, lease=30.0)
    holder.acquire()
    got = []

    def wait() -> None:
        lock = client.lock(name, lease=5.0)
        if lock.acquire(timeout=5.0):
            got.append(time.monotonic())
            lock.release()

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.3)
    released_at = time.monotonic()
    holder.release()
    t.join(10)
    assert got and got[0] - released_at < 0.1


def test_signal_interrupts_a_blocking_wait(client: redlatch.Client, r: redis.Redis, held: redlatch.Lock, name: str) -> None:
    class Interrupted(Exception):
        pass

    def handler(signum, frame):  # type: ignore[no-untyped-def]
        raise Interrupted

    old = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        t0 = time.monotonic()
        with pytest.raises(Interrupted):
            client.lock(name).acquire()  # forever, unless interrupted
        assert time.monotonic() - t0 < 2.0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert wait_until(lambda: numsub(r, name) == 0, timeout=5.0)
