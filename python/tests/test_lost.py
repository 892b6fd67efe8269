"""Lost locks: the watchdog or an extend finds the lock gone; what `with` does then."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis

import redlatch
import redlatch.asyncio
from conftest import wait_until


@pytest.fixture
def fast(redis_url: str) -> redlatch.Client:
    """Watchdog every 0.1 s (timeout 0.3 s), so losses are seen quickly."""
    return redlatch.Client(redis_url, watchdog_timeout=0.3)


def test_watchdog_reports_loss_and_with_raises(fast: redlatch.Client, r: redis.Redis, name: str) -> None:
    lock = fast.lock(name)
    with pytest.raises(redlatch.LockLostError) as info:
        with lock:
            assert not lock.lost
            r.delete(name)
            assert wait_until(lambda: lock.lost, timeout=3.0)
    assert info.value.code == 3
    assert isinstance(info.value, redlatch.NotOwnedError)
    assert not lock.lost  # the hold is gone with the block


def test_block_exception_wins_with_loss_as_note(fast: redlatch.Client, r: redis.Redis, name: str) -> None:
    lock = fast.lock(name)
    with pytest.raises(KeyError) as info:
        with lock:
            r.delete(name)
            wait_until(lambda: lock.lost, timeout=3.0)
            raise KeyError("from the block")
    notes = getattr(info.value, "__notes__", [])
    assert any("LockLostError" in n for n in notes)


def test_watchdog_keeps_lock_alive(fast: redlatch.Client, r: redis.Redis, name: str) -> None:
    lock = fast.lock(name)
    with lock:
        time.sleep(1.0)  # more than three watchdog timeouts
        assert r.exists(name)
        assert not lock.lost
        assert lock.owned()


def test_lock_taken_by_someone_else(fast: redlatch.Client, r: redis.Redis, name: str) -> None:
    lock = fast.lock(name)
    with pytest.raises(redlatch.LockLostError):
        with lock:
            r.set(name, "someone-else", px=10_000)
            assert wait_until(lambda: lock.lost, timeout=3.0)
    assert r.get(name) == b"someone-else"  # never deleted someone else's lock


def test_extend_after_loss(client: redlatch.Client, r: redis.Redis, name: str) -> None:
    lock = client.lock(name, lease=10.0)
    lock.acquire()
    r.delete(name)
    with pytest.raises(redlatch.NotOwnedError):
        lock.extend(10.0)
    assert lock.lost
    assert not r.exists(name)  # extend never re-creates a lost lock
    with pytest.raises(redlatch.LockLostError):
        lock.extend(10.0)
    with pytest.raises(redlatch.LockLostError):
        lock.release()


def test_fixed_lease_runs_out(client: redlatch.Client, r: redis.Redis, name: str) -> None:
    lock = client.lock(name, lease=0.2)
    lock.acquire()
    assert wait_until(lambda: lock.lost, timeout=3.0)
    assert not r.exists(name)
    with pytest.raises(redlatch.LockLostError):
        lock.release()


def test_with_after_lease_ran_out(client: redlatch.Client, name: str) -> None:
    with pytest.raises(redlatch.LockLostError):
        with client.lock(name, lease=0.1):
            time.sleep(0.4)


@pytest.mark.asyncio
async def test_async_with_after_loss(redis_url: str, r: redis.Redis, name: str) -> None:
    client = redlatch.asyncio.Client(redis_url, watchdog_timeout=0.3)
    lock = client.lock(name)
    with pytest.raises(redlatch.LockLostError):
        async with lock:
            r.delete(name)
            for _ in range(100):
                if lock.lost:
                    break
                await asyncio.sleep(0.03)
            assert lock.lost
    with pytest.raises(ValueError) as info:
        async with lock:
            r.delete(name)
            for _ in range(100):
                if lock.lost:
                    break
                await asyncio.sleep(0.03)
            raise ValueError("block")
    assert any("LockLostError" in n for n in getattr(info.value, "__notes__", []))
