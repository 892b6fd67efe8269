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
    assert str(info.value) == f'lock "{name}" is held by another owner; wait ran out'


def test_a_with_block_carries_the_cores_reason_for_a_refusal(redis_url: str, r: redis.Redis, name: str) -> None:
    # The test server has no replica, so a sync_replicas acquire is refused by WAIT: acquire()
    # says False, and a with block raises the core's reason (not "held by another owner"; a
    # user trial of stop 41 found the reason lost).
    client = redlatch.Client(redis_url, sync_replicas=1)
    assert client.lock(name, lease=5.0).acquire(timeout=0) is False
    for make in (lambda: client.lock(name, lease=5.0, wait=0), lambda: client.multi_lock([name], wait=0)):
        with pytest.raises(redlatch.NotAcquiredError, match=r"only 0 of 1 replica\(s\) confirmed") as info:
            with make():
                pass  # pragma: no cover
        assert info.value.code == 1
        assert wait_until(lambda: not r.exists(name))  # rolled back


@pytest.mark.asyncio
async def test_an_async_with_block_carries_the_cores_reason_for_a_refusal(redis_url: str, name: str) -> None:
    import redlatch.asyncio

    client = redlatch.asyncio.Client(redis_url, sync_replicas=1)
    assert await client.lock(name, lease=5.0).acquire(timeout=0) is False
    for make in (lambda: client.lock(name, lease=5.0, wait=0), lambda: client.multi_lock([name], wait=0)):
        with pytest.raises(redlatch.NotAcquiredError, match=r"only 0 of 1 replica\(s\) confirmed"):
            async with make():
                pass  # pragma: no cover


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
