"""Faults and edge cases (issue #10 items 1, 2, 3, 6, 7, 8; #14 item 4): stale connections,
releases that stay retryable, lost holds that no longer count as held, the reason of every
NotOwnedError, application data under a lock name and a least-privilege ACL user."""

from __future__ import annotations

import asyncio
import gc
import time
from typing import Iterator

import pytest
import redis

import redlatch
import redlatch.asyncio
from conftest import wait_until


@pytest.fixture
def idle_timeout(r: redis.Redis) -> Iterator[None]:
    """Redis closes connections idle for 1 s (restored afterwards: the server is shared)."""
    r.config_set("timeout", 1)
    try:
        yield
    finally:
        r.config_set("timeout", 0)


def idle() -> None:
    # 1 s idle, plus Redis' 100 ms client check (hz 10), plus margin.
    time.sleep(2.3)


def test_single_try_calls_after_redis_closed_the_idle_connection(
    redis_url: str, name: str, idle_timeout: None
) -> None:
    c = redlatch.Client(redis_url)
    lock = c.lock(name, lease=30.0, wait=0)
    assert lock.acquire()
    lock.release()
    idle()
    assert lock.acquire()  # was RedisConnectionError: broken pipe
    idle()
    assert lock.locked()
    lock.release()
    rl = c.rlock(name + ":r", lease=30.0, wait=0)
    assert rl.acquire()
    idle()
    assert rl.owned()
    rl.release()


def test_a_release_with_an_unknown_outcome_can_be_retried(redis_url: str, r: redis.Redis, name: str) -> None:
    c = redlatch.Client(redis_url, network_timeout=0.3)
    for lock in (c.lock(name, lease=20.0), c.rlock(name + ":r", lease=20.0)):
        assert lock.acquire()
        if lock.reentrant:
            assert lock.acquire()  # nested: the retry must decrement once, not twice
        r.client_pause(1000)  # the release waits past the network timeout, then applies
        with pytest.raises(redlatch.RedisConnectionError):
            lock.release()
        time.sleep(0.9)  # the pause is over; the first attempt applied, its latch lives 1 s
        lock.release()  # was NotOwnedError "not held by this thread" while the key lived on
        if lock.reentrant:
            assert lock.hold_count() == 1
            lock.release()
        assert not r.exists(lock.name)
        with pytest.raises(redlatch.NotOwnedError) as info:
            lock.release()
        assert info.value.reason == "never_held"


def test_a_release_with_an_unknown_outcome_can_be_retried_asyncio(
    redis_url: str, r: redis.Redis, name: str
) -> None:
    async def main() -> None:
        c = redlatch.asyncio.Client(redis_url, network_timeout=0.3)
        lock = c.lock(name, lease=20.0)
        assert await lock.acquire()
        r.client_pause(1000)
        with pytest.raises(redlatch.RedisConnectionError):
            await lock.release()
        await asyncio.sleep(0.9)
        await lock.release()
        assert not r.exists(name)

    asyncio.run(main())


def test_a_lost_or_expired_hold_no_longer_counts_as_held(redis_url: str, r: redis.Redis, name: str) -> None:
    c = redlatch.Client(redis_url, watchdog_timeout=1.0)
    lock = c.lock(name)
    assert lock.acquire()
    r.delete(name)
    assert wait_until(lambda: lock.lost, timeout=3.0)
    assert lock.acquire(timeout=2.0)  # was LockError "already held by this thread"
    assert lock.owned()
    lock.release()
    fixed = c.lock(name + ":fixed", lease=0.2)
    assert fixed.acquire()
    time.sleep(0.4)
    assert fixed.acquire(timeout=2.0)
    fixed.release()

    async def main() -> None:
        ac = redlatch.asyncio.Client(redis_url)
        alock = ac.lock(name + ":a", lease=0.2)
        assert await alock.acquire()
        await asyncio.sleep(0.4)
        assert await alock.acquire(timeout=2.0)
        await alock.release()

    asyncio.run(main())


def test_every_not_owned_error_says_why(client: redlatch.Client, r: redis.Redis, name: str) -> None:
    lock = client.lock(name, lease=0.2)
    assert lock.acquire()
    time.sleep(0.4)
    with pytest.raises(redlatch.LockLostError) as lost:
        lock.release()  # was NotOwnedError (C and Node said LOCK_LOST)
    assert (lost.value.code, lost.value.reason) == (3, "expired")
    with pytest.raises(redlatch.NotOwnedError) as never:
        lock.release()
    assert (never.value.code, never.value.reason) == (2, "never_held")
    held = client.lock(name, lease=10.0)
    assert held.acquire()
    r.delete(name)
    with pytest.raises(redlatch.NotOwnedError) as gone:
        held.release()
    assert not isinstance(gone.value, redlatch.LockLostError)
    assert gone.value.reason == "deleted"
    taken = client.rlock(name + ":t", lease=10.0)
    assert taken.acquire()
    r.delete(name + ":t")
    r.hset(name + ":t", "another-client:1", 1)
    r.pexpire(name + ":t", 10_000)
    with pytest.raises(redlatch.NotOwnedError) as other:
        taken.extend(10.0)
    assert other.value.reason == "taken"
    with pytest.raises(redlatch.LockLostError) as seen:
        taken.release()  # the extend saw the loss
    assert seen.value.reason == "taken"
    # A `with` block that ends after a loss: LockLostError with the reason of what ended it.
    with pytest.raises(redlatch.LockLostError) as block:
        with client.lock(name, lease=10.0):
            r.delete(name)
    assert block.value.reason == "deleted"
    assert issubclass(redlatch.KeyConflictError, redlatch.LockError)
    assert (redlatch.NoPermissionError.code, redlatch.OutOfMemoryError.code, redlatch.KeyConflictError.code) == (
        9,
        10,
        11,
    )


def test_application_data_under_a_lock_name_is_a_key_conflict(
    client: redlatch.Client, r: redis.Redis, name: str
) -> None:
    r.set(name, "x")
    for lock in (client.lock(name, lease=1.0), client.rlock(name, lease=1.0)):
        started = time.monotonic()
        with pytest.raises(redlatch.KeyConflictError) as info:
            lock.acquire()  # waits forever by default: used to hang
        assert time.monotonic() - started < 2.0
        assert info.value.code == 11
        with pytest.raises(redlatch.KeyConflictError):
            lock.acquire(blocking=False)  # used to say "busy" (False)
    assert r.get(name) == b"x"


def test_application_data_under_a_family_name_is_a_key_conflict(
    client: redlatch.Client, r: redis.Redis, name: str
) -> None:
    """A user trial found a write lock granted inside an application hash, a fair lock waiting
    out its whole wait on one, force_unlock deleting data, and a Lua error from a semaphore."""
    r.hset(name, "theme", "dark")
    for lock in (client.rw_lock(name, lease=1.0).write(), client.rw_lock(name, lease=1.0).read(),
                 client.fair_lock(name, lease=1.0)):
        started = time.monotonic()
        with pytest.raises(redlatch.KeyConflictError):
            lock.acquire()  # waits forever by default
        assert time.monotonic() - started < 2.0
    with pytest.raises(redlatch.KeyConflictError):
        client.force_unlock(name)
    assert r.hgetall(name) == {b"theme": b"dark"} and r.pttl(name) == -1
    text = f"{name}:text"
    r.set(text, "hello")
    with pytest.raises(redlatch.KeyConflictError):
        client.force_unlock(text)
    with pytest.raises(redlatch.KeyConflictError):
        client.semaphore(text).available()
    with pytest.raises(redlatch.KeyConflictError):
        client.count_down_latch(text).count()
    assert r.get(text) == b"hello"


def test_a_bad_permit_id_writes_nothing(client: redlatch.Client, r: redis.Redis, name: str) -> None:
    sem = client.permit_semaphore(name, permits=1)  # its permits are set lazily, by the first call
    with pytest.raises(ValueError):
        sem.release("zz")
    assert r.exists(name) == 0
    assert sem.available() == 1


def test_an_acl_user_without_publish_gets_no_permission_and_keeps_the_hold(
    redis_url: str, r: redis.Redis, name: str
) -> None:
    user = "rl_nopub"
    r.execute_command(
        "ACL", "SETUSER", user, "reset", "on", ">pw", f"~{name}*", "~redisson_*", "~redlatch_*",
        "&redisson_lock__channel:*", "+ping", "+eval", "+evalsha", "+get", "+set", "+del",
        "+exists", "+pttl", "+pexpire", "+hget", "+hexists", "+hincrby",
    )
    try:
        host = redis_url.split("://", 1)[1].rsplit("@", 1)[-1]  # without the suite's own login
        c = redlatch.Client(f"redis://{user}:pw@{host}")
        lock = c.lock(name, lease=10.0)
        assert lock.acquire()
        with pytest.raises(redlatch.NoPermissionError) as info:
            lock.release()  # used to raise after the key was already deleted
        assert info.value.code == 9
        assert r.exists(name), "a refused release leaves the key untouched"
        r.execute_command("ACL", "SETUSER", user, "+publish")
        lock.release()  # still held: released now
        assert not r.exists(name)
    finally:
        r.execute_command("ACL", "DELUSER", user)


def test_reentry_keeps_the_outer_fencing_token_and_fence_ttl(
    client: redlatch.Client, r: redis.Redis, name: str
) -> None:
    rl = client.rlock(name, lease=1.0, fenced=True, fence_ttl=3600.0)
    assert rl.acquire()
    outer = rl.fencing_token
    assert rl.acquire()
    assert rl.fencing_token == outer  # was outer + 1, then outer again after the release
    rl.release()
    assert rl.fencing_token == outer
    rl.release()
    ttl = r.pttl(f"redisson_lock_token:{{{name}}}")
    assert 3_500_000 < ttl <= 3_600_000
    # Without fenced=True a fence_ttl did nothing, silently (a Python trial of stop 46).
    with pytest.raises(ValueError, match="fenced locks only"):
        client.lock(name, fence_ttl=60.0)
    with pytest.raises(ValueError, match="fenced locks only"):
        client.rw_lock(name, fence_ttl=60.0)


def test_an_acquire_left_pending_on_a_closed_loop_holds_nothing(redis_url: str, r: redis.Redis, name: str) -> None:
    # A user trial: a loop closed while an acquire waited. Once the lock was free, that
    # acquire took it, and its watchdog renewed it for the life of the process, with nothing
    # left to release it. Now the closed loop and its calls are collected and the acquire stops.
    blocker = redlatch.Client(redis_url).lock(name, lease=30.0)
    assert blocker.acquire()
    lock = redlatch.asyncio.Client(redis_url).lock(name)  # watchdog mode
    loop = asyncio.new_event_loop()
    task = loop.create_task(lock.acquire())
    loop.run_until_complete(asyncio.sleep(0.2))  # the acquire waits
    loop.close()
    del task, loop
    gc.collect()
    blocker.release()
    # Nobody may get it for good: the pending acquire is stopped, or releases at once.
    assert wait_until(lambda: not r.exists(name), timeout=10.0)
    other = redlatch.Client(redis_url).lock(name, lease=5.0)
    assert other.acquire(timeout=5.0)
    other.release()
