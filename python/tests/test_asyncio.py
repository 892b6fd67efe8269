"""asyncio: tasks contending, per-task ownership, cancellation leaving nothing behind."""

from __future__ import annotations

import asyncio
import gc
import os
import random
import subprocess
import sys
import textwrap

import pytest
import redis

import redlatch
import redlatch.asyncio
from conftest import numsub, wait_until

pytestmark = pytest.mark.asyncio


@pytest.fixture
def aclient(redis_url: str) -> redlatch.asyncio.Client:
    return redlatch.asyncio.Client(redis_url)


async def test_async_with(aclient: redlatch.asyncio.Client, r: redis.Redis, name: str) -> None:
    lock = aclient.lock(name, lease=5.0, fenced=True)
    async with lock as entered:
        assert entered is lock
        assert await lock.locked()
        assert await lock.owned()
        ttl = await lock.ttl()
        assert ttl is not None and 4.0 < ttl <= 5.0
        assert isinstance(lock.fencing_token, int)
        assert not lock.lost
        assert r.exists(name)
    assert not await lock.locked()
    assert await lock.ttl() is None
    assert lock.fencing_token is None


@pytest.mark.parametrize("kind", ["lock", "rlock"])
async def test_tasks_on_one_counter_exact(aclient: redlatch.asyncio.Client, r: redis.Redis, name: str, kind: str) -> None:
    lock = getattr(aclient, kind)(name)
    counter = {"value": 0}
    tasks, rounds = 8, 15

    async def work() -> None:
        for _ in range(rounds):
            async with lock:
                value = counter["value"]
                await asyncio.sleep(0.001)  # other tasks run here; only the lock keeps them out
                counter["value"] = value + 1

    await asyncio.gather(*(work() for _ in range(tasks)))
    assert counter["value"] == tasks * rounds


async def test_tasks_never_share_a_hold(aclient: redlatch.asyncio.Client, name: str) -> None:
    for kind in ("lock", "rlock"):
        lock = getattr(aclient, kind)(f"{name}:{kind}", lease=5.0)
        assert await lock.acquire()

        async def other() -> list:
            out = []
            for op in (lock.release, lambda: lock.extend(10.0)):
                try:
                    await op()
                except redlatch.NotOwnedError:
                    out.append("refused")
            out.append(await lock.owned())
            out.append(await lock.acquire(timeout=0.1))
            out.append(lock.fencing_token)
            return out

        assert await asyncio.create_task(other()) == ["refused", "refused", False, False, None]
        assert await lock.owned()
        await lock.release()
        assert not await lock.locked()


async def test_rlock_reenters_within_a_task(aclient: redlatch.asyncio.Client, name: str) -> None:
    rl = aclient.rlock(name)
    async with rl:
        async with aclient.rlock(name):
            assert await rl.hold_count() == 2
    assert not await rl.locked()


async def test_non_reentrant_reacquire_raises(aclient: redlatch.asyncio.Client, name: str) -> None:
    lock = aclient.lock(name, lease=5.0)
    async with lock:
        with pytest.raises(redlatch.LockError) as info:
            await lock.acquire()
        assert info.value.code == 6


async def test_cancelled_waiter_leaves_no_key_and_no_subscription(
    aclient: redlatch.asyncio.Client, r: redis.Redis, name: str
) -> None:
    holder = aclient.lock(name, lease=10.0)
    assert await holder.acquire()
    waiter = aclient.lock(name)
    task = asyncio.create_task(waiter.acquire())
    assert await asyncio.to_thread(wait_until, lambda: numsub(r, name) == 1, 5.0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(wait_until, lambda: numsub(r, name) == 0, 5.0)
    await holder.release()
    await asyncio.sleep(0.2)
    assert not r.exists(name)
    assert numsub(r, name) == 0


async def test_cancellation_at_any_moment_leaves_nothing(
    aclient: redlatch.asyncio.Client, r: redis.Redis, name: str
) -> None:
    rng = random.Random(7)
    for kind in ("lock", "rlock"):
        lock = getattr(aclient, kind)(f"{name}:{kind}")

        async def attempt() -> None:
            if await lock.acquire():
                await lock.release()

        for _ in range(40):
            task = asyncio.create_task(attempt())
            await asyncio.sleep(rng.uniform(0, 0.002))
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
        key = f"{name}:{kind}"
        assert await asyncio.to_thread(wait_until, lambda: not r.exists(key), 5.0)
        # Unsubscribing runs in the background after the waiter is dropped.
        assert await asyncio.to_thread(wait_until, lambda: numsub(r, key) == 0, 5.0)


async def test_cancelled_holder_task_is_released_on_exit(aclient: redlatch.asyncio.Client, r: redis.Redis, name: str) -> None:
    lock = aclient.lock(name)
    entered = asyncio.Event()

    async def hold_forever() -> None:
        async with lock:
            entered.set()
            await asyncio.sleep(3600)

    task = asyncio.create_task(hold_forever())
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not r.exists(name)


async def test_wait_timeout_async(aclient: redlatch.asyncio.Client, name: str) -> None:
    holder = aclient.lock(name, lease=5.0)
    await holder.acquire()

    async def contend() -> None:
        assert await aclient.lock(name).acquire(timeout=0.2) is False
        with pytest.raises(redlatch.NotAcquiredError):
            async with aclient.lock(name, wait=0.1):
                pass

    await asyncio.create_task(contend())
    await holder.release()


async def test_force_unlock_async(aclient: redlatch.asyncio.Client, name: str) -> None:
    lock = aclient.lock(name, lease=5.0)
    await lock.acquire()
    assert await aclient.force_unlock(name) is True
    with pytest.raises(redlatch.NotOwnedError):
        await lock.release()



async def test_cancel_while_subscribing_leaves_no_subscription(
    aclient: redlatch.asyncio.Client, r: redis.Redis, name: str
) -> None:
    holder = aclient.lock(name, lease=30.0)
    assert await holder.acquire()
    rng = random.Random(11)
    waiter = aclient.lock(name)

    async def attempt() -> None:
        await waiter.acquire()

    for _ in range(60):  # cancelled around the first busy attempt and the SUBSCRIBE
        task = asyncio.create_task(attempt())
        await asyncio.sleep(rng.uniform(0, 0.003))
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert await asyncio.to_thread(wait_until, lambda: numsub(r, name) == 0, 5.0)
    assert await holder.owned()
    await holder.release()
    assert not r.exists(name)


async def test_release_completes_even_if_cancelled(aclient: redlatch.asyncio.Client, r: redis.Redis, name: str) -> None:
    lock = aclient.lock(name, lease=30.0)
    acquired = asyncio.Event()

    async def hold_then_release() -> None:
        await lock.acquire()
        acquired.set()
        await asyncio.sleep(0)  # let the test cancel us during the release below
        await lock.release()

    for _ in range(10):
        acquired.clear()
        task = asyncio.create_task(hold_then_release())
        await acquired.wait()
        await asyncio.sleep(0)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        assert await asyncio.to_thread(wait_until, lambda: not r.exists(name), 5.0)


async def test_a_task_cancelled_in_release_no_longer_holds(
    aclient: redlatch.asyncio.Client, r: redis.Redis, name: str
) -> None:
    # The task is cancelled while it awaits release() (as by `asyncio.timeout(0)`): the release
    # goes on, and the hold stops being the task's at once. Its next acquire went to the
    # task's list of holds instead, still holding the releasing one until the reply was read:
    # "already held by this task; it is not reentrant", and hold_count() stayed 1 (a user trial).
    lock = aclient.lock(name, lease=30.0)

    async def cancelled_in_release() -> int:
        cancelled_in_it = 0
        for _ in range(8):
            assert await lock.acquire()
            this = asyncio.current_task()
            assert this is not None
            this.cancel()  # cancels the release's future as soon as the task awaits it
            try:
                await lock.release()
            except asyncio.CancelledError:
                cancelled_in_it += 1
            else:
                # Its reply came within the call's first poll (the call runs on this loop's
                # thread): the future was done when awaited, so nothing suspended and the
                # cancellation is still pending (asyncio delivers it at the next suspension).
                with pytest.raises(asyncio.CancelledError):
                    await asyncio.sleep(0)
            if sys.version_info >= (3, 11):
                this.uncancel()
            assert await lock.hold_count() == 0
            assert await lock.acquire(timeout=5.0)  # waits in Redis if the key is still set
            assert await lock.hold_count() == 1
            await lock.release()
        return cancelled_in_it

    assert await asyncio.create_task(cancelled_in_release()) > 0, "never cancelled inside release()"
    assert not r.exists(name)


async def test_cancel_as_the_acquire_succeeds_leaves_no_hold(
    aclient: redlatch.asyncio.Client, r: redis.Redis, name: str
) -> None:
    # The waiter's task is cancelled around the moment the lock is handed to it. Whether the
    # cancel won (CancelledError) or came too late (the task returned True and ended holding
    # it), once the task is gone nothing may keep the lock held: no renewal, no key, without
    # any further call into redlatch (found by a new-user trial: the asyncio future kept the
    # hold alive until the next call into the module).
    holder, waiter = aclient.lock(name, lease=10.0), aclient.lock(name)
    for i in range(250):
        await holder.acquire()
        task = asyncio.create_task(waiter.acquire())
        await asyncio.sleep(0.003)
        await holder.release()
        for _ in range(i % 7):
            await asyncio.sleep(0)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        del task
        gc.collect()
        # Blocking on purpose: no redlatch call may run meanwhile.
        assert wait_until(lambda: not r.exists(name), timeout=3.0), f"still held after iteration {i}"


async def test_rlock_releases_through_any_handle(
    aclient: redlatch.asyncio.Client, r: redis.Redis, name: str
) -> None:
    a, b = aclient.rlock(name), aclient.rlock(name)
    await a.acquire()
    await b.acquire()
    await b.release()
    await b.release()  # the task's first hold, taken through a
    assert not r.exists(name)
    with pytest.raises(redlatch.NotOwnedError):
        await a.release()


async def test_awaited_calls_use_no_thread_beyond_the_worker(redis_url: str) -> None:
    # Issue 15: each awaited call used to hand its result to a thread of tokio's blocking pool,
    # which took the GIL to call loop.call_soon_threadsafe: a third thread per call. Results
    # now reach the loop through its own completion queue, so the runtime's worker is the only
    # redlatch thread however many calls were awaited. A fresh interpreter, so that nothing
    # else in this session started runtime threads.
    script = textwrap.dedent(
        """
        import asyncio, os, sys
        import redlatch.asyncio

        async def main() -> None:
            lock = redlatch.asyncio.Client(sys.argv[1]).lock("test:threads", lease=10.0)
            for _ in range(50):
                assert await lock.acquire()
                assert await lock.locked()
                await lock.release()

        asyncio.run(main())
        names = []
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/comm") as f:
                names.append(f.read().strip())
        print(sum(1 for n in names if n.startswith("redlatch-py")))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "REDLATCH_WORKER_THREADS"}
    out = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", script, redis_url],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1", f"redlatch threads: {out.stdout.strip()} (want the 1 worker)"

