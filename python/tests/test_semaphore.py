"""Semaphore (Redisson RSemaphore) and permit-expirable semaphore: at most `permits` holders
across processes, no permit leaked by killed holders, bad input refused; sync and asyncio."""

from __future__ import annotations

import asyncio
import gc
import re
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import redis

import redlatch
import redlatch.asyncio
from conftest import admin, wait_until

# Each thread takes one permit and samples how many holders are inside (INCR while holding).
HOLDERS_WORKER = textwrap.dedent(
    """
    import sys, threading, time, redis, redlatch
    url, admin_url, name, inside, samples, threads, rounds = sys.argv[1:8]
    r = redis.Redis.from_url(admin_url)
    sem = redlatch.Client(url).semaphore(name, permits=3, wait=60.0)
    failed = []
    def work():
        try:
            for _ in range(int(rounds)):
                with sem:
                    r.rpush(samples, r.incr(inside))
                    time.sleep(0.02)
                    r.decr(inside)
        except BaseException as e:
            failed.append(e)
    ts = [threading.Thread(target=work) for _ in range(int(threads))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    sys.exit(1 if failed or sem.held else 0)
    """
)


def test_at_most_permits_holders_across_processes(redis_url: str, r: redis.Redis, name: str) -> None:
    inside, samples = name + ":inside", name + ":samples"
    procs = [
        subprocess.Popen([sys.executable, "-c", HOLDERS_WORKER, redis_url, admin(redis_url), name, inside, samples, "3", "4"])
        for _ in range(4)
    ]
    for p in procs:
        assert p.wait(90) == 0
    seen = [int(v) for v in r.lrange(samples, 0, -1)]
    assert len(seen) == 4 * 3 * 4
    assert max(seen) <= 3, f"more than 3 holders at once: {max(seen)}"
    assert max(seen) >= 2  # they did run concurrently
    assert int(r.get(name) or 0) == 3  # every permit back


def test_semaphore_basics(client: redlatch.Client, r: redis.Redis, name: str) -> None:
    sem = client.semaphore(name)
    assert sem.available() == 0
    assert sem.try_set_permits(2) is True
    assert sem.try_set_permits(5) is False
    assert sem.available() == 2
    assert sem.acquire(2) is True and sem.held == 2
    assert sem.acquire(blocking=False) is False
    assert sem.acquire(timeout=0.1) is False
    sem.release(1)
    with sem:  # one permit, released at the end
        assert sem.held == 2 and sem.available() == 0
        with pytest.raises(redlatch.NotAcquiredError) as refused:
            with client.semaphore(name, wait=0.05):
                pass  # pragma: no cover
        assert str(refused.value) == f'semaphore "{name}" has 0 of the 1 permit asked for; wait ran out'
    assert sem.held == 1
    sem.release()
    assert sem.available() == 2 and sem.held == 0
    with pytest.raises(redlatch.NotOwnedError) as info:
        sem.release()  # more than this handle holds: refused, nothing sent
    assert info.value.reason == "never_held"
    assert sem.available() == 2
    # permits= sets the count for a semaphore that does not exist yet, on first use.
    assert client.semaphore(name + ":new", permits=4).available() == 4
    assert client.semaphore(name, permits=9).available() == 2
    assert "Semaphore" in repr(sem)


def test_a_release_wakes_another_threads_waiter(client: redlatch.Client, name: str) -> None:
    sem = client.semaphore(name, permits=1)
    assert sem.acquire()
    got = []
    t = threading.Thread(target=lambda: got.append(sem.acquire(timeout=10)))
    t.start()
    sem.release()  # any thread may release what the object holds, as with threading.Semaphore
    t.join(15)
    assert got == [True]
    sem.release()


@pytest.mark.parametrize(
    "value, exc",
    [(0, ValueError), (-1, ValueError), (2**31, ValueError), (True, TypeError), (1.5, TypeError), ("1", TypeError)],
)
def test_bad_counts_are_refused(client: redlatch.Client, r: redis.Redis, name: str, value: object, exc: type) -> None:
    sem = client.semaphore(name)
    with pytest.raises(exc):
        sem.try_set_permits(value)  # type: ignore[arg-type]
    with pytest.raises(exc):
        sem.acquire(value)  # type: ignore[arg-type]
    with pytest.raises(exc):
        client.semaphore(name, permits=value)  # type: ignore[arg-type]
    with pytest.raises(exc):
        client.permit_semaphore(name).try_set_permits(value)  # type: ignore[arg-type]
    assert not r.exists(name)


def test_bad_names_and_waits_are_refused(client: redlatch.Client) -> None:
    for make in (client.semaphore, client.permit_semaphore, client.count_down_latch):
        with pytest.raises(ValueError):
            make("")
        with pytest.raises(TypeError):
            make(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        client.semaphore("x", wait=-1)


KILLED_HOLDER = textwrap.dedent(
    """
    import sys, time, redlatch
    sem = redlatch.Client(sys.argv[1], watchdog_timeout=1.0).permit_semaphore(sys.argv[2])
    renewed = sem.acquire()            # the watchdog renews it while this process lives
    fixed = sem.acquire(lease=1.0)     # comes back one second after the acquire
    print("held", flush=True)
    time.sleep(60)
    """
)


def test_no_permit_leaked_after_holders_are_killed(client: redlatch.Client, redis_url: str, name: str) -> None:
    sem = client.permit_semaphore(name, permits=6)
    assert sem.available() == 6
    procs = [subprocess.Popen([sys.executable, "-c", KILLED_HOLDER, redis_url, name], stdout=subprocess.PIPE) for _ in range(3)]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == b"held"
        assert sem.try_acquire(lease=5.0) is None  # all six taken
    finally:
        for p in procs:
            p.kill()
            p.wait()
    assert wait_until(lambda: sem.available() == 6, timeout=10), sem.available()


def test_permits(client: redlatch.Client, redis_url: str, name: str) -> None:
    sem = client.permit_semaphore(name, permits=2)
    first = sem.acquire(lease=5.0)
    assert re.fullmatch(r"[0-9a-f]{32}", first.id)
    assert first.lease == 5.0
    assert first.id not in repr(first)
    with sem.acquire() as second:  # watchdog mode
        assert second.lease is None
        assert sem.available() == 0
        with pytest.raises(redlatch.NotAcquiredError) as refused:
            sem.acquire(timeout=0.1)
        # The core's words (Node's and C's), the name in double quotes (a user trial of stop 41).
        assert str(refused.value) == f'semaphore "{name}" has no permit available; wait ran out'
    assert sem.available() == 1
    # Released by id through another handle (another process or a Java client does the same).
    redlatch.Client(redis_url).permit_semaphore(name).release(first.id)
    assert sem.available() == 2
    with pytest.raises(redlatch.NotOwnedError):
        first.release()  # its id is gone
    # A permit whose lease ran out is known lost (a user trial of stop 44: no `lost` to ask).
    brief = sem.acquire(lease=0.2)
    assert not brief.lost
    time.sleep(0.4)
    assert brief.lost
    with pytest.raises(redlatch.LockLostError):
        brief.release()
    with pytest.raises(redlatch.NotOwnedError) as info:
        sem.release("0" * 32)
    assert "0" * 32 not in str(info.value)  # ids are never echoed
    with pytest.raises(ValueError):
        sem.release("not-an-id")
    with pytest.raises(ValueError):
        sem.acquire(lease=0)


def test_a_collected_permit_with_a_lease_stays_taken_until_released_by_id(
    client: redlatch.Client, redis_url: str, name: str
) -> None:
    # A user trial of stop 38: keeping only the id (the Redisson way to hand a permit over)
    # and letting the Permit be collected gave the permit back at once; a second holder got in.
    sem = client.permit_semaphore(name, permits=1)
    permit_id = sem.acquire(lease=60.0).id
    gc.collect()
    time.sleep(0.3)
    assert sem.available() == 0
    other = redlatch.Client(redis_url).permit_semaphore(name)
    assert other.try_acquire(lease=5.0) is None
    other.release(permit_id)
    assert sem.available() == 1
    # Without a lease nothing would renew it once collected: that one is given back.
    sem.acquire()
    assert wait_until(lambda: sem.available() == 1)


@pytest.mark.asyncio
async def test_a_collected_async_permit_with_a_lease_stays_taken(redis_url: str, name: str) -> None:
    sem = redlatch.asyncio.Client(redis_url).permit_semaphore(name, permits=1)
    permit_id = (await sem.acquire(lease=60.0)).id
    gc.collect()
    await asyncio.sleep(0.3)
    assert await sem.available() == 0
    await sem.release(permit_id)
    assert await sem.available() == 1


class _CancelOnGrant:
    """A native permit semaphore whose acquire cancels `task` as soon as its future has the
    permit: before the task resumes (the future's callbacks run in order, and this one was
    added before the task's), so the task gets CancelledError with a grant in hand."""

    def __init__(self, native: object) -> None:
        self.native = native
        self.task: "asyncio.Task[object] | None" = None

    def __getattr__(self, attr: str) -> object:
        return getattr(self.native, attr)

    def acquire_async(self, *args: object, **kwargs: object) -> "asyncio.Future[object]":
        future: "asyncio.Future[object]" = self.native.acquire_async(*args, **kwargs)  # type: ignore[attr-defined]
        future.add_done_callback(lambda _: self.task.cancel() if self.task else None)
        return future


@pytest.mark.asyncio
@pytest.mark.parametrize("lease", [600.0, None])
async def test_a_cancelled_acquire_of_a_permit_takes_nothing(
    redis_url: str, r: redis.Redis, name: str, lease: "float | None"
) -> None:
    # A user trial of stop 44: a task cancelled once its permit was granted dropped the
    # Permit, and a dropped Permit with a lease stays taken (its id may have been handed
    # over): nobody ever had this one's id, so it is given back, whatever its lease.
    sem = redlatch.asyncio.Client(redis_url).permit_semaphore(name, permits=1)
    assert await sem.available() == 1
    spy = _CancelOnGrant(sem._native)
    sem._native = spy  # type: ignore[assignment]
    spy.task = asyncio.create_task(sem.acquire(lease=lease))
    with pytest.raises(asyncio.CancelledError):
        await spy.task
    zset = f"{{{name}}}:timeout"
    for _ in range(100):
        if r.zcard(zset) == 0:
            break
        await asyncio.sleep(0.05)
    assert r.zcard(zset) == 0, "the permit was given back"
    assert await sem.available() == 1


@pytest.mark.asyncio
async def test_async_semaphores(redis_url: str, r: redis.Redis, name: str) -> None:
    aclient = redlatch.asyncio.Client(redis_url)
    sem = aclient.semaphore(name, permits=2, wait=5.0)
    inside = 0
    most = 0

    async def work() -> None:
        nonlocal inside, most
        async with sem:
            inside += 1
            most = max(most, inside)
            await asyncio.sleep(0.02)
            inside -= 1

    await asyncio.gather(*(work() for _ in range(6)))
    assert most == 2 and await sem.available() == 2 and sem.held == 0
    # A cancelled waiter takes nothing.
    assert await sem.acquire(2)
    waiter = asyncio.create_task(sem.acquire())
    await asyncio.sleep(0.2)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    await sem.release(2)
    await asyncio.sleep(0.3)
    assert await sem.available() == 2 and sem.held == 0

    psem = aclient.permit_semaphore(name + ":p", permits=1)
    async with await psem.acquire(lease=5.0) as permit:
        assert len(permit.id) == 32
        assert await psem.try_acquire() is None
    assert await psem.available() == 1


@pytest.mark.parametrize("mode", ["sync", "asyncio"])
def test_a_scope_end_release_held_up_by_a_pause_lands_with_an_empty_script_cache(
    redis_url: str, r: redis.Redis, name: str, mode: str
) -> None:
    # The release script is not cached (a fresh or restarted server) and the pause outlasts
    # the release latch, so the background retries give up: only the release queued on the
    # connection can land. Before stop 36 it was an EVALSHA answered NOSCRIPT after the scope
    # had given up, and the permit stayed taken for good (stop 35's N2: sync 3/3).
    r.script_flush()
    if mode == "sync":
        sem = redlatch.Client(redis_url, network_timeout=0.5).semaphore(name, permits=3)
        try:
            with sem:
                r.execute_command("CLIENT", "PAUSE", 1500)
        except redlatch.RedisConnectionError:
            pass  # the outcome was unknown when the scope ended
    else:
        async def scope() -> redlatch.asyncio.Semaphore:
            sem = redlatch.asyncio.Client(redis_url, network_timeout=0.5).semaphore(name, permits=3)
            try:
                async with sem:
                    r.execute_command("CLIENT", "PAUSE", 1500)
            except redlatch.RedisConnectionError:
                pass
            return sem

        sem = asyncio.run(scope())  # type: ignore[assignment]
    assert wait_until(lambda: r.get(name) == b"3", timeout=6.0), r.get(name)
    assert sem.held == 0


@pytest.mark.parametrize("kind", ["semaphore", "permit_semaphore"])
def test_permits_declared_by_the_handle_are_set_within_the_acquires_wait(
    redis_url: str, r: redis.Redis, name: str, kind: str
) -> None:
    # A Python family trial of stop 46: `permits=` was set by a call of its own before the
    # acquire, which a Redis paused for longer than the network timeout failed at once with
    # RedisConnectionError, although the acquire could wait 10 s. The core's acquire sets them
    # now, retrying within its wait as it retries its own request.
    client = redlatch.Client(redis_url, network_timeout=0.3)
    sem = getattr(client, kind)(name, permits=2)
    r.execute_command("CLIENT", "PAUSE", 1200)
    got = sem.acquire(timeout=10.0)
    assert got, "acquired once the pause ended"
    if kind == "permit_semaphore":
        got.release()
    else:
        sem.release()
    assert int(r.get(name) or 0) == 2


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["semaphore", "permit_semaphore"])
async def test_async_permits_declared_by_the_handle_are_set_within_the_acquires_wait(
    redis_url: str, r: redis.Redis, name: str, kind: str
) -> None:
    client = redlatch.asyncio.Client(redis_url, network_timeout=0.3)
    sem = getattr(client, kind)(name, permits=2)
    r.execute_command("CLIENT", "PAUSE", 1200)
    got = await sem.acquire(timeout=10.0)
    assert got, "acquired once the pause ended"
    if kind == "permit_semaphore":
        await got.release()
    else:
        await sem.release()
    assert int(r.get(name) or 0) == 2


@pytest.mark.asyncio
async def test_a_permit_release_by_something_not_an_id_says_what_to_pass(redis_url: str, name: str) -> None:
    # A user trial of stop 46: `release(5)`, as for a counting semaphore, raised pyo3's raw
    # "argument 'permit_id': 'int' object cannot be converted to 'PyString'".
    sem = redlatch.Client(redis_url).permit_semaphore(name, permits=1)
    for bad in (5, None, b"00" * 16):
        with pytest.raises(TypeError, match=r"permit_id must be a str \(a permit's id, 32 hex digits\)"):
            sem.release(bad)  # type: ignore[arg-type]
    async_sem = redlatch.asyncio.Client(redis_url).permit_semaphore(name, permits=1)
    with pytest.raises(TypeError, match="permit.release()"):
        await async_sem.release(5)  # type: ignore[arg-type]


def test_a_release_into_a_lost_count_writes_nothing_and_the_count_can_be_set_again(
    client: redlatch.Client, r: redis.Redis, name: str
) -> None:
    # A re-trial of stop 47: after a restart without persistence a holder's release made the
    # count anew at 1, and try_set_permits(2) then found it set: a permit short for good.
    sem = client.semaphore(name, permits=2)
    assert sem.acquire()
    r.delete(name)  # as a restart of Redis without persistence would
    with pytest.raises(redlatch.NotOwnedError) as lost:
        sem.release()
    assert lost.value.reason == "deleted"
    assert sem.held == 0 and not r.exists(name)
    assert sem.try_set_permits(2) is True and sem.available() == 2
