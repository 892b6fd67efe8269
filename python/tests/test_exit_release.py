"""The end of a ``with`` / ``async with`` block when its release fails: a release whose outcome
is unknown goes on in the background at once (the core's ``release_final``), for every kind
of hold a block can end (locks, permits, multi-locks). Found by a user trial: before, only the
dropped object started it, and the block's exception keeps that object alive."""

from __future__ import annotations

from typing import Callable, Tuple

import pytest
import redis

import redlatch
import redlatch.asyncio
from conftest import wait_until
from stalling_proxy import StallingProxy, port_of as _port


@pytest.mark.asyncio
async def test_a_release_failed_at_the_end_of_async_with_goes_on_in_the_background(
    redis_url: str, r: redis.Redis, name: str
) -> None:
    # The exception the block raises keeps the block's frame, and so the hold, alive (here in
    # a list; in real code a logged or re-raised error, or a frame cycle until the garbage
    # collector runs). Before, only dropping the hold started the background release: the
    # lock stayed taken for its whole lease.
    proxy = StallingProxy(_port(redis_url))
    try:
        lock = redlatch.asyncio.Client(f"redis://127.0.0.1:{proxy.port}", network_timeout=0.3).lock(name, lease=20.0)
        kept = []
        try:
            async with lock:
                proxy.refuse = True
                proxy.reset_all()
        except redlatch.RedisConnectionError as e:
            kept.append(e)
        assert kept, "the release at the end of the block should have failed"
        assert r.exists(name)
        proxy.refuse = False
        assert wait_until(lambda: not r.exists(name), timeout=5.0), f"still held (PTTL {r.pttl(name)} ms)"
    finally:
        proxy.close()


def test_a_release_failed_at_the_end_of_with_goes_on_in_the_background(redis_url: str, r: redis.Redis, name: str) -> None:
    proxy = StallingProxy(_port(redis_url))
    try:
        lock = redlatch.Client(f"redis://127.0.0.1:{proxy.port}", network_timeout=0.3).lock(name, lease=20.0)
        kept = []
        try:
            with lock:
                proxy.refuse = True
                proxy.reset_all()
        except redlatch.RedisConnectionError as e:
            kept.append(e)
        assert kept, "the release at the end of the block should have failed"
        assert r.exists(name)
        proxy.refuse = False
        assert wait_until(lambda: not r.exists(name), timeout=5.0), f"still held (PTTL {r.pttl(name)} ms)"
    finally:
        proxy.close()


def _permit_or_multi(client, redis_url: str, r: redis.Redis, name: str, what: str) -> Tuple[object, Callable[[], bool]]:
    """A block's context manager on `client` and a check, made directly on Redis, that what
    it holds is still taken."""
    if what == "permit":
        direct = redlatch.Client(redis_url).permit_semaphore(name, permits=1)
        return client.permit_semaphore(name, permits=1), lambda: direct.available() == 0
    members = [name + ":a", name + ":b"]
    return client.multi_lock(members, lease=20.0), lambda: r.exists(*members) > 0


def _given_back_once_reachable(proxy: StallingProxy, kept: list, taken: Callable[[], bool]) -> None:
    """After a block whose release failed (the proxy cut and refused connections): the error
    reached the caller and the hold is still taken; once connections are accepted again, the
    background release gives it back."""
    assert kept, "the release at the end of the block should have failed"
    assert taken()
    proxy.refuse = False
    assert wait_until(lambda: not taken(), timeout=5.0), "still taken"


@pytest.mark.parametrize("what", ["permit", "multi_lock"])
def test_a_permit_or_multi_lock_release_failed_at_the_end_of_with_goes_on_in_the_background(
    redis_url: str, r: redis.Redis, name: str, what: str
) -> None:
    proxy = StallingProxy(_port(redis_url))
    try:
        client = redlatch.Client(f"redis://127.0.0.1:{proxy.port}", network_timeout=0.3)
        made, taken = _permit_or_multi(client, redis_url, r, name, what)
        kept = []
        try:
            with made.acquire(lease=20.0) if what == "permit" else made:  # type: ignore[attr-defined]
                assert taken()
                proxy.refuse = True
                proxy.reset_all()
        except redlatch.RedisConnectionError as e:
            kept.append(e)
        _given_back_once_reachable(proxy, kept, taken)
    finally:
        proxy.close()


@pytest.mark.asyncio
@pytest.mark.parametrize("what", ["permit", "multi_lock"])
async def test_a_permit_or_multi_lock_release_failed_at_the_end_of_async_with_goes_on_in_the_background(
    redis_url: str, r: redis.Redis, name: str, what: str
) -> None:
    proxy = StallingProxy(_port(redis_url))
    try:
        client = redlatch.asyncio.Client(f"redis://127.0.0.1:{proxy.port}", network_timeout=0.3)
        made, taken = _permit_or_multi(client, redis_url, r, name, what)
        kept = []
        try:
            block = await made.acquire(lease=20.0) if what == "permit" else made  # type: ignore[attr-defined]
            async with block:
                assert taken()
                proxy.refuse = True
                proxy.reset_all()
        except redlatch.RedisConnectionError as e:
            kept.append(e)
        _given_back_once_reachable(proxy, kept, taken)
    finally:
        proxy.close()


def test_a_semaphore_block_whose_release_times_out_gives_its_permit_back_once(
    redis_url: str, r: redis.Redis, name: str
) -> None:
    # Found by a user trial (stop 35): the release at the end of the block is sent while
    # Redis is paused, so it times out and applies later. The handle kept counting the permit
    # (held 1), and its next release() gave it back a second time: 4 of 3 permits, for good.
    client = redlatch.Client(redis_url, network_timeout=0.5)
    sem = client.semaphore(name, permits=3)
    with sem:  # once, so that the release script is cached
        pass
    with pytest.raises(redlatch.RedisConnectionError):
        with sem:
            r.execute_command("CLIENT", "PAUSE", 1500)
    assert sem.held == 0, "the block gave its permit up"
    assert wait_until(lambda: int(r.get(name) or 0) == 3, timeout=5.0), "the permit was not given back"
    with pytest.raises(redlatch.NotOwnedError) as raised:
        sem.release()
    assert raised.value.reason == "never_held"
    assert int(r.get(name) or 0) == 3


@pytest.mark.asyncio
async def test_a_semaphore_async_block_whose_release_times_out_gives_its_permit_back_once(
    redis_url: str, r: redis.Redis, name: str
) -> None:
    client = redlatch.asyncio.Client(redis_url, network_timeout=0.5)
    sem = client.semaphore(name, permits=3)
    async with sem:
        pass
    with pytest.raises(redlatch.RedisConnectionError):
        async with sem:
            r.execute_command("CLIENT", "PAUSE", 1500)
    assert sem.held == 0, "the block gave its permit up"
    assert wait_until(lambda: int(r.get(name) or 0) == 3, timeout=5.0), "the permit was not given back"
    with pytest.raises(redlatch.NotOwnedError):
        await sem.release()
    assert int(r.get(name) or 0) == 3
