"""A semaphore acquire that timed out is undone behind it (found by a user trial, stop 35):
the undo of a semaphore's or permit semaphore's acquire was not recognized as an undo, so it
did not follow its attempt onto the attempt's connection. Sent elsewhere it could run first
(finding nothing to give back) or not at all, and the acquire's permits, applied later,
stayed taken: a semaphore's for good (its count has no TTL), a permit for its whole lease."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import redis

import redlatch
import redlatch.asyncio
from stalling_proxy import StallingProxy, lose_the_multiplexed_connection_soon, port_of

OPTIONS = {"network_timeout": 0.5, "watchdog_timeout": 0.3}


def _timed_out(result: Any) -> None:
    # What a caller sees: the attempt timed out (or, had a retry fitted, nothing taken).
    assert not result, "the attempt was held back, it cannot have been granted"


def _acquire_sync(client: redlatch.Client, kind: str, name: str) -> None:
    try:
        if kind == "semaphore":
            _timed_out(client.semaphore(name).acquire(2, timeout=0))
        else:
            _timed_out(client.permit_semaphore(name).acquire(lease=60.0, timeout=0))
    except (redlatch.RedisConnectionError, redlatch.NotAcquiredError):
        pass


async def _acquire_async(client: redlatch.asyncio.Client, kind: str, name: str) -> None:
    try:
        if kind == "semaphore":
            _timed_out(await client.semaphore(name).acquire(2, timeout=0))
        else:
            _timed_out(await client.permit_semaphore(name).acquire(lease=60.0, timeout=0))
    except (redlatch.RedisConnectionError, redlatch.NotAcquiredError):
        pass


def _take_and_give_back(sem: Any, kind: str) -> None:
    # Once, so that the acquire's script is cached: the held-back attempt is then an EVALSHA
    # that applies (uncached, its NOSCRIPT answer would come after the call gave up).
    if kind == "semaphore":
        assert sem.acquire(2, timeout=0)
        sem.release(2)
    else:
        sem.acquire(lease=60.0, timeout=0).release()


async def _take_and_give_back_async(sem: Any, kind: str) -> None:
    if kind == "semaphore":
        assert await sem.acquire(2, timeout=0)
        await sem.release(2)
    else:
        await (await sem.acquire(lease=60.0, timeout=0)).release()


def _permits_left(r: redis.Redis, kind: str, name: str) -> "tuple[int, int]":
    held = r.zcard(f"{{{name}}}:timeout") if kind == "permit" else 0
    return int(r.get(name) or 0), held


@pytest.mark.parametrize("kind", ["semaphore", "permit"])
@pytest.mark.parametrize("api", ["asyncio", "blocking"])
def test_a_timed_out_semaphore_acquire_is_undone_behind_it(
    redis_url: str, r: redis.Redis, name: str, api: str, kind: str
) -> None:
    # The attempt is held back on the event loop's (or calling thread's) connection past the
    # network timeout while the multiplexed connection goes: the undo must follow the
    # attempt. On the old code it went to the multiplexed path, which cannot connect here,
    # and the late grant kept the permits (count 0 of 2 left).
    if api == "blocking" and "valkey_version" in r.info("server"):
        pytest.skip("a Valkey client's blocking calls keep the multiplexed path")
    proxy = StallingProxy(port_of(redis_url))
    url = f"redis://127.0.0.1:{proxy.port}"
    try:
        if api == "asyncio":
            client = redlatch.asyncio.Client(url, **OPTIONS)

            async def scenario() -> None:
                sem = client.semaphore(name) if kind == "semaphore" else client.permit_semaphore(name)
                assert await sem.try_set_permits(2)
                warm = client.lock(name + ":warm", lease=10.0)
                end = time.monotonic() + 5.0
                while proxy.accepted < 2 and time.monotonic() < end:  # the loop's connection
                    assert await warm.acquire()
                    await warm.release()
                    await asyncio.sleep(0.01)
                for _ in range(5):  # ... in use once ready
                    assert await warm.acquire()
                    await warm.release()
                assert proxy.accepted == 2  # the multiplexed connection, then the loop's
                await _take_and_give_back_async(sem, kind)  # its scripts cached
                renewed = client.lock(name + ":renewed")  # kept: renewed, it sees the loss
                assert await renewed.acquire()
                proxy.stalled.add(2)
                lose_the_multiplexed_connection_soon(proxy)
                await _acquire_async(client, kind, name)

            asyncio.run(scenario())
        else:
            client = redlatch.Client(url, **OPTIONS)
            sem = client.semaphore(name) if kind == "semaphore" else client.permit_semaphore(name)
            assert sem.try_set_permits(2)
            warm = client.lock(name + ":warm", lease=10.0)
            for _ in range(5):
                assert warm.acquire()
                warm.release()
            assert proxy.accepted == 2  # the multiplexed connection, then the calling thread's
            _take_and_give_back(sem, kind)  # its scripts cached
            renewed = client.lock(name + ":renewed")  # kept: renewed, it sees the loss
            assert renewed.acquire()
            proxy.stalled.add(2)
            lose_the_multiplexed_connection_soon(proxy)
            _acquire_sync(client, kind, name)
        time.sleep(0.3)
        proxy.stalled.clear()
        time.sleep(0.5)  # the attempt, then (now) its undo reach Redis
        assert _permits_left(r, kind, name) == (2, 0), "the late grant's permits were left taken"
    finally:
        proxy.close()


def test_a_blocking_acquire_timed_out_twice_is_undone_behind_both_tries(
    redis_url: str, r: redis.Redis, name: str
) -> None:
    # Found by the re-trial of stop 35 (Redis paused past the network timeout: 3 of 4 runs): a
    # blocking acquire's try waits on the calling thread's connection, and the driver's retry
    # of it on the multiplexed connection. The undo followed only the first; when that
    # connection went with both (closed before Redis ran them), the retry's grant, applied
    # later, kept the permit for good. Here a proxy holds both back, then drops the first.
    if "valkey_version" in r.info("server"):
        pytest.skip("a Valkey client's blocking calls keep the multiplexed path")
    proxy = StallingProxy(port_of(redis_url))
    try:
        client = redlatch.Client(f"redis://127.0.0.1:{proxy.port}", network_timeout=0.5)
        sem = client.semaphore(name)
        assert sem.try_set_permits(2)
        _take_and_give_back(sem, "semaphore")  # its scripts cached
        assert proxy.accepted == 2  # the multiplexed connection, then the calling thread's
        proxy.stalled.update({1, 2})
        try:
            assert not sem.acquire(2, timeout=0)
        except redlatch.RedisConnectionError:
            pass  # what a caller sees
        time.sleep(0.8)  # the undo went behind both tries (and gave up on its reply)
        proxy.cut(2)  # the calling thread's try and undo never reach Redis
        proxy.stalled.clear()
        time.sleep(0.5)  # the retry, then (now) its undo, run
        assert _permits_left(r, "semaphore", name) == (2, 0), "the retry's grant kept the permits"
        assert sem.held == 0
    finally:
        proxy.close()
