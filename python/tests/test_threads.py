"""Threads sharing lock objects: exact counters and per-thread ownership."""

from __future__ import annotations

import threading
import time
from typing import List

import pytest
import redis

import redlatch
from conftest import admin


def _bump(r: redis.Redis, key: str) -> None:
    """A deliberately non-atomic read-modify-write (lost updates without the lock)."""
    value = int(r.get(key) or 0)
    time.sleep(0.0005)
    r.set(key, value + 1)


@pytest.mark.parametrize("kind", ["lock", "rlock"])
def test_threads_on_one_counter_exact(client: redlatch.Client, redis_url: str, name: str, kind: str) -> None:
    lock = getattr(client, kind)(name)  # one shared lock object, watchdog mode
    counter = name + ":counter"
    threads, rounds = 8, 25
    errors: List[BaseException] = []

    def work() -> None:
        r = redis.Redis.from_url(admin(redis_url))
        try:
            for _ in range(rounds):
                with lock:
                    _bump(r, counter)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)
        finally:
            r.close()

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors
    assert int(redis.Redis.from_url(admin(redis_url)).get(counter) or 0) == threads * rounds


def test_other_thread_cannot_release_or_extend(client: redlatch.Client, name: str) -> None:
    lock = client.lock(name, lease=5.0)
    lock.acquire()
    seen: List[str] = []

    def intruder() -> None:
        for op in (lock.release, lambda: lock.extend(10.0)):
            try:
                op()
            except redlatch.NotOwnedError:
                seen.append("refused")
        seen.append(f"owned={lock.owned()}")
        seen.append(f"acquired={lock.acquire(blocking=False)}")
        seen.append(f"token={lock.fencing_token}")

    t = threading.Thread(target=intruder)
    t.start()
    t.join(10)
    assert seen == ["refused", "refused", "owned=False", "acquired=False", "token=None"]
    assert lock.owned()
    lock.release()


def test_rlock_is_per_thread(client: redlatch.Client, name: str) -> None:
    rl = client.rlock(name, lease=5.0)
    rl.acquire()
    result: List[bool] = []
    t = threading.Thread(target=lambda: result.append(rl.acquire(timeout=0.2)))
    t.start()
    t.join(10)
    assert result == [False]  # another thread is another owner: it waits
    assert rl.acquire(blocking=False)  # this thread re-enters
    assert rl.hold_count() == 2
    rl.release()
    rl.release()
    assert not rl.locked()


def test_blocking_wait_releases_the_gil(client: redlatch.Client, name: str) -> None:
    lock = client.lock(name, lease=5.0)
    lock.acquire()
    ticks = 0
    stop = threading.Event()

    def waiter() -> None:
        client.lock(name).acquire(timeout=0.5)
        stop.set()

    t = threading.Thread(target=waiter)
    t.start()
    while not stop.is_set():  # runs only while the waiter does not hold the GIL
        ticks += 1
        time.sleep(0.001)
    t.join()
    lock.release()
    assert ticks > 50


def test_thread_exit_releases_its_holds(client: redlatch.Client, name: str) -> None:
    lock = client.lock(name)
    t = threading.Thread(target=lock.acquire)
    t.start()
    t.join()
    from conftest import admin, wait_until

    assert wait_until(lambda: not lock.locked(), timeout=5.0)
