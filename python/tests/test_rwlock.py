"""Read/write lock (Redisson RReadWriteLock): readers share and writers exclude everything
across processes (interval log), a crashed reader's hold expires alone, the refused upgrade,
the writer's read lock, with / async with; sync and asyncio."""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
import textwrap
import threading
from typing import List, Tuple

import pytest
import redis

import redlatch
import redlatch.asyncio
from conftest import admin, wait_until

# Each thread takes the read or the write lock at random and logs the interval it held it,
# measured inside the hold (CLOCK_MONOTONIC is one clock for every process on the host).
INTERVAL_WORKER = textwrap.dedent(
    """
    import json, random, sys, threading, time, redis, redlatch
    url, admin_url, name, log, threads, rounds = sys.argv[1:7]
    r = redis.Redis.from_url(admin_url)
    rw = redlatch.Client(url).rw_lock(name, wait=60.0)
    failed = []
    def work(seed):
        rnd = random.Random(seed)
        try:
            for _ in range(int(rounds)):
                mode = "write" if rnd.random() < 0.3 else "read"
                with getattr(rw, mode)():
                    start = time.monotonic()
                    time.sleep(0.03)
                    end = time.monotonic()
                r.rpush(log, json.dumps([mode, start, end]))
        except BaseException as e:
            failed.append(e)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(int(threads))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    sys.exit(1 if failed else 0)
    """
)


def overlaps(a: Tuple[float, float], b: Tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_readers_overlap_and_writers_overlap_nothing(redis_url: str, r: redis.Redis, name: str) -> None:
    log = name + ":log"
    procs = [
        subprocess.Popen([sys.executable, "-c", INTERVAL_WORKER, redis_url, admin(redis_url), name, log, "3", "6"])
        for _ in range(3)
    ]
    for p in procs:
        assert p.wait(90) == 0
    entries = [json.loads(e) for e in r.lrange(log, 0, -1)]
    assert len(entries) == 3 * 3 * 6
    writes = [(s, e) for mode, s, e in entries if mode == "write"]
    reads = [(s, e) for mode, s, e in entries if mode == "read"]
    assert writes and reads
    for i, w in enumerate(writes):
        others = writes[:i] + writes[i + 1:] + reads
        assert not [o for o in others if overlaps(w, o)], f"a write hold overlapped another hold: {w}"
    shared = sum(1 for i, a in enumerate(reads) for b in reads[i + 1:] if overlaps(a, b))
    assert shared > 0, "no two read holds ever overlapped"
    assert not r.exists(name)


CRASHING_READER = textwrap.dedent(
    """
    import sys, time, redlatch
    rw = redlatch.Client(sys.argv[1], watchdog_timeout=1.0).rw_lock(sys.argv[2])
    rw.read().acquire()
    print("held", flush=True)
    time.sleep(60)
    """
)


def read_timeouts(r: redis.Redis, name: str) -> List[bytes]:
    return sorted(r.scan_iter(match=f"{{{name}}}:*:rwlock_timeout:*"))


def test_a_crashed_readers_hold_expires_while_others_keep_theirs(
    client: redlatch.Client, redis_url: str, r: redis.Redis, name: str
) -> None:
    crashing = subprocess.Popen([sys.executable, "-c", CRASHING_READER, redis_url, name], stdout=subprocess.PIPE)
    try:
        assert crashing.stdout is not None and crashing.stdout.readline().strip() == b"held"
        mine = redlatch.Client(redis_url, watchdog_timeout=1.0).rw_lock(name).read()
        assert mine.acquire(blocking=False)  # readers of two processes share it
        try:
            assert len(read_timeouts(r, name)) == 2
            crashing.kill()
            crashing.wait()
            # The dead reader's hold lapses with its 1 s lease; ours is renewed.
            assert wait_until(lambda: len(read_timeouts(r, name)) == 1, timeout=10)
            assert mine.owned()
            assert r.hget(name, "mode") == b"read"
            writer = client.rw_lock(name).write()
            assert writer.acquire(blocking=False) is False  # our read hold still counts
        finally:
            mine.release()
        # No live read hold left: the lock is gone (the dead reader's field with it).
        assert not r.exists(name)
        assert writer.acquire(blocking=False)
        writer.release()
    finally:
        if crashing.poll() is None:
            crashing.kill()
            crashing.wait()


def test_read_to_write_upgrade_is_refused_at_once(client: redlatch.Client, r: redis.Redis, name: str) -> None:
    rw = client.rw_lock(name, wait=30.0)
    with rw.read():
        before = r.hgetall(name)
        with pytest.raises(redlatch.WouldDeadlockError) as info:
            rw.write().acquire()
        assert info.value.code == 12
        assert isinstance(info.value, redlatch.LockError)
        assert r.hgetall(name) == before  # nothing changed in Redis
        assert rw.read().hold_count() == 1
    assert not r.exists(name)


def test_the_writer_may_take_the_read_lock(client: redlatch.Client, r: redis.Redis, name: str) -> None:
    rw = client.rw_lock(name)
    with rw.write() as w:
        assert w.kind == "write"
        with rw.read() as rd:
            assert rd.kind == "read"
            assert r.hget(name, "mode") == b"write"
        with rw.write():  # reentrant in write mode
            assert w.hold_count() == 2
    assert not r.exists(name)


def test_writer_excludes_readers_of_other_threads(client: redlatch.Client, name: str) -> None:
    rw = client.rw_lock(name)
    got: List[bool] = []
    with rw.write():
        t = threading.Thread(target=lambda: got.append(rw.read().acquire(timeout=0.2)))
        t.start()
        t.join()
    with rw.read():
        t = threading.Thread(target=lambda: got.append(rw.write().acquire(timeout=0.2)))
        t.start()
        t.join()
    assert got == [False, False]


def test_holds_last_as_long_as_the_rw_lock_object(client: redlatch.Client, r: redis.Redis, name: str) -> None:
    rw = client.rw_lock(name)
    assert rw.read().acquire()  # through a temporary side object
    gc.collect()
    assert r.exists(name) and rw.read().hold_count() == 1
    rw.read().release()
    assert not r.exists(name)


def test_defaults_and_overrides(client: redlatch.Client, name: str) -> None:
    rw = client.rw_lock(name, lease=5.0, wait=1.0)
    assert rw.name == name
    with rw.read() as rd:
        ttl = rd.ttl()
        assert ttl is not None and 4.0 < ttl <= 5.0
    with rw.write(lease=2.0) as w:
        ttl = w.ttl()
        assert ttl is not None and 1.0 < ttl <= 2.0
    with pytest.raises(ValueError):
        client.rw_lock(name, lease=-1)
    with pytest.raises(ValueError):
        rw.read(wait=float("nan"))
    with pytest.raises(ValueError):
        client.rw_lock("")


@pytest.mark.asyncio
async def test_async_read_write(redis_url: str, r: redis.Redis, name: str) -> None:
    aclient = redlatch.asyncio.Client(redis_url)
    rw = aclient.rw_lock(name, wait=5.0)
    readers_in = 0
    most = 0

    async def reader() -> None:
        nonlocal readers_in, most
        async with rw.read():
            readers_in += 1
            most = max(most, readers_in)
            await asyncio.sleep(0.05)
            readers_in -= 1

    await asyncio.gather(*(reader() for _ in range(4)))
    assert most == 4  # four tasks read at once
    async with rw.read():
        with pytest.raises(redlatch.WouldDeadlockError):
            await rw.write().acquire()
        other = asyncio.create_task(rw.write().acquire(timeout=0.2))
        assert await other is False  # another task's writer waits for our reader
    async with rw.write():
        async with rw.read():
            assert r.hget(name, "mode") == b"write"
    assert not r.exists(name)
