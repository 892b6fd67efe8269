"""Count-down latch (Redisson RCountDownLatch) and multi-lock (RedissonMultiLock): latch
waiters in several processes all wake; multi-lock processes on overlapping sets in opposite
orders finish with exact counters; all or nothing; bad input; sync and asyncio."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
from typing import List

import pytest
import redis

import redlatch
import redlatch.asyncio
from conftest import admin, wait_until

LATCH_WAITER = textwrap.dedent(
    """
    import sys, threading, redlatch
    latch = redlatch.Client(sys.argv[1]).count_down_latch(sys.argv[2])
    results = []
    ts = [threading.Thread(target=lambda: results.append(latch.wait(timeout=30))) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    sys.exit(0 if results == [True, True] else 1)
    """
)


def latch_channel(name: str) -> str:
    return f"redisson_countdownlatch__channel__{{{name}}}"


def test_latch_waiters_in_several_processes_all_wake(client: redlatch.Client, redis_url: str, r: redis.Redis, name: str) -> None:
    latch = client.count_down_latch(name)
    assert latch.try_set_count(2) is True
    assert latch.try_set_count(5) is False
    procs = [subprocess.Popen([sys.executable, "-c", LATCH_WAITER, redis_url, name]) for _ in range(3)]
    try:
        # Every process is waiting (subscribed to the latch channel) before the count runs out.
        assert wait_until(lambda: int(r.pubsub_numsub(latch_channel(name))[0][1]) >= 3, timeout=20)
        latch.count_down()
        assert latch.count() == 1
        latch.count_down()
        for p in procs:
            assert p.wait(30) == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert latch.count() == 0 and not r.exists(name)


def test_latch_basics(client: redlatch.Client, name: str) -> None:
    latch = client.count_down_latch(name)
    assert latch.count() == 0
    assert latch.wait(timeout=0) is True  # open (never set)
    latch.try_set_count(1)
    assert latch.wait(timeout=0.1) is False
    t = threading.Timer(0.1, latch.count_down)
    t.start()
    assert latch.wait(timeout=10) is True
    t.join()
    with pytest.raises(ValueError):
        latch.try_set_count(0)
    with pytest.raises(ValueError):
        latch.wait(timeout=-1)
    assert name in repr(latch)


MULTI_WORKER = textwrap.dedent(
    """
    import sys, time, redis, redlatch
    url, admin_url, a, b, reverse, rounds = sys.argv[1:7]
    r = redis.Redis.from_url(admin_url)
    client = redlatch.Client(url)
    members = [a, client.rlock(b)]  # a lease lock by name and a reentrant lock
    if reverse == "1":
        members.reverse()
    multi = client.multi_lock(members, lease=5.0)
    for _ in range(int(rounds)):
        with multi:
            va, vb = int(r.get(a + ":n") or 0), int(r.get(b + ":n") or 0)
            time.sleep(0.002)
            r.set(a + ":n", va + 1)
            r.set(b + ":n", vb + 1)
    """
)


def test_multi_lock_processes_in_opposite_orders_are_exact(redis_url: str, r: redis.Redis, name: str) -> None:
    a, b = name + ":a", name + ":b"
    rounds = 15
    procs = [
        subprocess.Popen([sys.executable, "-c", MULTI_WORKER, redis_url, admin(redis_url), a, b, str(i % 2), str(rounds)])
        for i in range(4)
    ]
    for p in procs:
        assert p.wait(90) == 0
    assert int(r.get(a + ":n") or 0) == 4 * rounds
    assert int(r.get(b + ":n") or 0) == 4 * rounds
    assert not r.exists(a, b)


def test_multi_lock_is_all_or_nothing(client: redlatch.Client, redis_url: str, r: redis.Redis, name: str) -> None:
    a, b = name + ":a", name + ":b"
    other = redlatch.Client(redis_url).lock(b, lease=5.0)
    multi = client.multi_lock([b, a], wait=0.2)
    assert multi.names == sorted([a, b])
    with other:
        assert multi.acquire() is False
        assert not r.exists(a)  # what was taken was rolled back
        with pytest.raises(redlatch.NotAcquiredError):
            with multi:
                pass
    with multi:
        assert r.exists(a) and r.exists(b)
        with pytest.raises(redlatch.LockError):
            multi.acquire()  # not reentrant: refused at once
        got: List[bool] = []
        t = threading.Thread(target=lambda: got.append(multi.acquire(timeout=0.1)))
        t.start()
        t.join()
        assert got == [False]  # another thread contends like another process
    assert not r.exists(a, b)
    with pytest.raises(redlatch.NotOwnedError):
        multi.release()


def test_multi_lock_bad_input(client: redlatch.Client, redis_url: str, name: str) -> None:
    with pytest.raises(ValueError):
        client.multi_lock([])
    with pytest.raises(ValueError):
        client.multi_lock([name, name])
    with pytest.raises(ValueError):
        client.multi_lock([name, ""])
    with pytest.raises(ValueError):
        client.multi_lock([name, redlatch.Client(redis_url).lock(name + ":x")])
    with pytest.raises(TypeError):
        client.multi_lock([name, 3])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        client.multi_lock(name)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        client.multi_lock([name], lease=0)


def test_a_multi_lock_over_a_lease_lock_this_thread_holds_raises_at_once(client: redlatch.Client, name: str) -> None:
    # A Python user trial of stop 46: it waited for itself (forever with no wait), where the
    # lease lock's own acquire raises LockError at once.
    held = client.lock(name + ":a", lease=10)
    held.acquire()
    try:
        multi = client.multi_lock([held, name + ":b"])
        with pytest.raises(redlatch.LockError) as err:
            multi.acquire(timeout=5)
        assert err.value.code == 6, err.value
        assert name + ":a" in str(err.value)
        # Another thread contends as usual (another owner).
        other: List[bool] = []
        t = threading.Thread(target=lambda: other.append(multi.acquire(timeout=0.2)))
        t.start()
        t.join()
        assert other == [False]
    finally:
        held.release()
    assert multi.acquire(timeout=5)
    multi.release()


@pytest.mark.asyncio
async def test_an_async_multi_lock_over_a_lease_lock_this_task_holds_raises_at_once(redis_url: str, name: str) -> None:
    aclient = redlatch.asyncio.Client(redis_url)
    held = aclient.lock(name + ":a", lease=10)
    await held.acquire()
    try:
        multi = aclient.multi_lock([held, name + ":b"])
        with pytest.raises(redlatch.LockError) as err:
            await multi.acquire(timeout=5)
        assert err.value.code == 6, err.value
    finally:
        await held.release()


@pytest.mark.asyncio
async def test_async_latch_and_multi_lock(redis_url: str, r: redis.Redis, name: str) -> None:
    aclient = redlatch.asyncio.Client(redis_url)
    latch = aclient.count_down_latch(name + ":latch")
    await latch.try_set_count(1)
    waiters = [asyncio.create_task(latch.wait(timeout=10)) for _ in range(3)]
    await asyncio.sleep(0.1)
    await latch.count_down()
    assert await asyncio.gather(*waiters) == [True, True, True]

    a, b = name + ":a", name + ":b"
    multi = aclient.multi_lock([aclient.rlock(b), a])
    counter = {"a": 0}

    async def work() -> None:
        for _ in range(5):
            async with multi:
                v = counter["a"]
                await asyncio.sleep(0.001)
                counter["a"] = v + 1

    await asyncio.gather(*(work() for _ in range(4)))
    assert counter["a"] == 20
    assert not r.exists(a, b)


def test_multi_lock_on_a_quorum_client(quorum_urls: List[str], name: str) -> None:
    q = redlatch.Client.quorum(quorum_urls)
    a, b = name + ":a", name + ":b"
    nodes = [redis.Redis.from_url(admin(u)) for u in quorum_urls]
    with q.multi_lock([b, q.rlock(a)], lease=5.0):
        assert sum(1 for n in nodes if n.exists(a) and n.exists(b)) >= 2  # a majority holds both
        assert redlatch.Client.quorum(quorum_urls).multi_lock([b], wait=0).acquire() is False
    assert not any(n.exists(a) or n.exists(b) for n in nodes)
    # The kinds a quorum cannot keep are refused with the core's message.
    with pytest.raises(ValueError):
        q.semaphore(name).available()
    with pytest.raises(ValueError):
        q.count_down_latch(name).count()
