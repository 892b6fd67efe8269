"""Fair lock (Redisson RFairLock): FIFO across processes, dead and departing waiters, the
with idiom, re-entry, quorum refusal; sync and asyncio."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
import time
from typing import List

import pytest
import redis

import redlatch
import redlatch.asyncio
from conftest import admin, wait_until


def queue_key(name: str) -> str:
    return f"redisson_lock_queue:{{{name}}}"


def timeout_key(name: str) -> str:
    return f"redisson_lock_timeout:{{{name}}}"


# Each thread queues on the fair lock and, once granted, logs the owner id that holds the
# hash (HKEYS), i.e. its own, as Redis sees it.
FIFO_WORKER = textwrap.dedent(
    """
    import sys, threading, redis, redlatch
    url, admin_url, name, log, threads = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    r = redis.Redis.from_url(admin_url)
    lock = redlatch.Client(url).fair_lock(name, wait=60.0)
    failed = []
    def waiter():
        try:
            with lock:
                r.rpush(log, r.hkeys(name)[0])
        except BaseException as e:
            failed.append(e)
    ts = [threading.Thread(target=waiter) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    sys.exit(1 if failed else 0)
    """
)


def test_fifo_order_of_20_waiters_in_4_processes(client: redlatch.Client, redis_url: str, r: redis.Redis, name: str) -> None:
    log = name + ":log"
    holder = client.fair_lock(name)
    assert holder.acquire(blocking=False)
    procs = [
        subprocess.Popen([sys.executable, "-c", FIFO_WORKER, redis_url, admin(redis_url), name, log, "5"])
        for _ in range(4)
    ]
    try:
        assert wait_until(lambda: r.llen(queue_key(name)) == 20, timeout=30), r.llen(queue_key(name))
        queued = r.lrange(queue_key(name), 0, -1)
        assert r.zcard(timeout_key(name)) == 20
        holder.release()
        for p in procs:
            assert p.wait(60) == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert r.lrange(log, 0, -1) == queued  # granted in exactly the order they queued
    assert not r.exists(name, queue_key(name), timeout_key(name))


DEAD_WAITER = textwrap.dedent(
    """
    import sys, redlatch
    lock = redlatch.Client(sys.argv[1]).fair_lock(sys.argv[2], wait=float(sys.argv[3]))
    lock.acquire()
    """
)


def test_a_killed_waiter_stalls_the_next_at_most_its_slot(redis_url: str, r: redis.Redis, name: str) -> None:
    # The holder's lease is the 1 s watchdog timeout, renewed: a joiner's deadline is that
    # lease plus its wait (Redisson's rule), so the killed waiter is dropped 2 s after its
    # deadline at most; the waiter behind it then gets the lock.
    short = redlatch.Client(redis_url, watchdog_timeout=1.0)
    holder = short.fair_lock(name)
    assert holder.acquire(blocking=False)
    slot = 2.0
    got: List[float] = []
    nxt = redlatch.Client(redis_url).fair_lock(name)

    def next_waiter() -> None:
        if nxt.acquire(timeout=20):
            got.append(time.monotonic())
            nxt.release()

    dead = subprocess.Popen([sys.executable, "-c", DEAD_WAITER, redis_url, name, str(slot)])
    try:
        assert wait_until(lambda: r.llen(queue_key(name)) == 1, timeout=20)
        t = threading.Thread(target=next_waiter)
        t.start()
        assert wait_until(lambda: r.llen(queue_key(name)) == 2, timeout=10)
    finally:
        dead.kill()
        dead.wait()
    killed = time.monotonic()
    holder.release()
    t.join(30)
    assert got, "the waiter behind a killed one never got the lock"
    # Bound: the dead waiter's slot after the holder's 1 s lease, plus scheduling slack.
    assert got[0] - killed < 1.0 + slot + 3.0
    assert r.llen(queue_key(name)) == 0


def test_a_waiter_that_gives_up_leaves_the_queue(client: redlatch.Client, redis_url: str, r: redis.Redis, name: str) -> None:
    holder = client.fair_lock(name)
    with holder:
        other = redlatch.Client(redis_url).fair_lock(name)
        assert other.acquire(timeout=0.3) is False
        assert r.llen(queue_key(name)) == 0
        assert r.zcard(timeout_key(name)) == 0
        # One try never queues (Redisson's tryLock()).
        assert other.acquire(blocking=False) is False
        assert r.llen(queue_key(name)) == 0


def test_a_waiter_whose_acquire_fails_leaves_the_queue(redis_url: str, r: redis.Redis, name: str) -> None:
    # Found by a user trial (stop 35): a queued waiter whose acquire failed (Redis paused past
    # the network timeout) left its entry in the queue, and the next waiter got the lock only
    # when that entry's slot ran out (16.5 s here) instead of at the release. MONITOR showed
    # its give-up never reaching Redis: it did not go behind its last attempt on that
    # attempt's connection (the client kept one abandoned call's connection for undos, not
    # each attempt's with its mark), and a new connection could not be made in the pause.
    holder = redlatch.Client(redis_url).fair_lock(name, lease=20.0)
    assert holder.acquire()
    waiter = redlatch.Client(redis_url, network_timeout=1.0).fair_lock(name, wait=1.0)
    pause = threading.Timer(0.5, lambda: r.execute_command("CLIENT", "PAUSE", 3000))
    pause.start()
    try:
        assert waiter.acquire() is False
    except redlatch.RedisConnectionError:
        pass  # what the trial saw: the wait's last attempt timed out
    pause.join()
    assert wait_until(lambda: r.llen(queue_key(name)) == 0, timeout=6.0), "the waiter stayed queued"
    holder.release()
    started = time.monotonic()
    assert redlatch.Client(redis_url).fair_lock(name).acquire(timeout=10.0)
    assert time.monotonic() - started < 5.0, "the next waiter waited out a dead entry's slot"


def test_with_reenters_and_releases(client: redlatch.Client, r: redis.Redis, name: str) -> None:
    lock = client.fair_lock(name, lease=5.0)
    assert lock.kind == "fair" and lock.reentrant
    with lock as entered:
        assert entered is lock
        with client.fair_lock(name, lease=5.0):  # another handle, same thread: re-enters
            assert lock.hold_count() == 2
            assert r.type(name) == b"hash"
        assert lock.hold_count() == 1
        ttl = lock.ttl()
        assert ttl is not None and 4.0 < ttl <= 5.0
        assert lock.owned()
    assert not lock.locked()
    assert not r.exists(name)
    assert "fair" in repr(lock)


def test_other_threads_are_excluded(client: redlatch.Client, name: str) -> None:
    lock = client.fair_lock(name)
    results: List[bool] = []
    with lock:
        t = threading.Thread(target=lambda: results.append(lock.acquire(timeout=0.2)))
        t.start()
        t.join()
    assert results == [False]


def test_fenced_fair_lock_gets_increasing_tokens(client: redlatch.Client, name: str) -> None:
    lock = client.fair_lock(name, fenced=True)
    with lock:
        first = lock.fencing_token
    with lock:
        second = lock.fencing_token
    assert isinstance(first, int) and isinstance(second, int) and second > first


def test_quorum_client_refuses_fair_and_rw_locks(quorum_urls: List[str], name: str) -> None:
    q = redlatch.Client.quorum(quorum_urls)
    for lock in (q.fair_lock(name), q.rw_lock(name).read(), q.rw_lock(name).write()):
        with pytest.raises(ValueError, match="single-node, Cluster or Sentinel"):
            lock.acquire()


def test_bad_input_is_refused(client: redlatch.Client) -> None:
    with pytest.raises(ValueError):
        client.fair_lock("")
    with pytest.raises(ValueError):
        client.fair_lock("x", lease=0)
    with pytest.raises(TypeError):
        client.fair_lock(7)  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_async_fifo_and_cancelled_waiter_leaves(redis_url: str, r: redis.Redis, name: str) -> None:
    aclient = redlatch.asyncio.Client(redis_url)
    lock = aclient.fair_lock(name, wait=20.0)
    order: List[int] = []
    await lock.acquire()

    async def waiter(i: int) -> None:
        async with lock:
            order.append(i)

    tasks = []
    for i in range(5):
        tasks.append(asyncio.create_task(waiter(i)))
        while r.llen(queue_key(name)) < i + 1:  # one at a time: the queue order is 0..4
            await asyncio.sleep(0.01)
    leaver = asyncio.create_task(waiter(99))
    while r.llen(queue_key(name)) < 6:
        await asyncio.sleep(0.01)
    leaver.cancel()
    with pytest.raises(asyncio.CancelledError):
        await leaver
    for _ in range(200):
        if r.llen(queue_key(name)) == 5:
            break
        await asyncio.sleep(0.01)
    assert r.llen(queue_key(name)) == 5  # the cancelled task left the queue
    await lock.release()
    await asyncio.wait_for(asyncio.gather(*tasks), 30)
    assert order == [0, 1, 2, 3, 4]
    assert not r.exists(name, queue_key(name))


@pytest.mark.asyncio
async def test_async_reentry_per_task(redis_url: str, r: redis.Redis, name: str) -> None:
    aclient = redlatch.asyncio.Client(redis_url)
    lock = aclient.fair_lock(name)
    async with lock:
        async with aclient.fair_lock(name):  # the same task re-enters through another handle
            assert await lock.hold_count() == 2
        other = asyncio.create_task(lock.acquire(timeout=0.2))
        assert await other is False  # another task is another owner
        assert await lock.owned()
    assert not r.exists(name)
    assert lock.kind == "fair" and "fair" in repr(lock)
