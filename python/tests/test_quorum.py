"""Redlock quorum over independent nodes."""

from __future__ import annotations

import socket
import threading
import time
from typing import List

import pytest
import redis

import redlatch
import redlatch.asyncio
from conftest import admin, wait_until


def dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"redis://127.0.0.1:{port}"


def test_quorum_lock_on_every_node(quorum_urls: List[str], name: str) -> None:
    client = redlatch.Client.quorum(quorum_urls)
    assert client.node_count == 3
    nodes = [redis.Redis.from_url(admin(u)) for u in quorum_urls]
    lock = client.lock(name, lease=10.0)
    with lock:
        assert sum(bool(n.exists(name)) for n in nodes) >= 2
        assert lock.locked() and lock.owned()
        assert client.lock(name).acquire(blocking=False) is False
    # A release returns once a majority confirmed; the last node may answer a moment later.
    assert wait_until(lambda: not any(n.exists(name) for n in nodes), timeout=5.0)


def test_quorum_threads_exact(quorum_urls: List[str], redis_url: str, name: str) -> None:
    client = redlatch.Client.quorum(quorum_urls)
    lock = client.rlock(name)
    r = redis.Redis.from_url(admin(redis_url))
    counter = name + ":counter"

    def work() -> None:
        rr = redis.Redis.from_url(admin(redis_url))
        for _ in range(10):
            with lock:
                v = int(rr.get(counter) or 0)
                time.sleep(0.0005)
                rr.set(counter, v + 1)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert int(r.get(counter) or 0) == 40


def test_quorum_with_one_node_down(quorum_urls: List[str], name: str) -> None:
    client = redlatch.Client.quorum(quorum_urls[:2] + [dead_url()], network_timeout=0.5)
    with client.lock(name, lease=5.0) as lock:
        assert lock.owned()


def test_no_majority_is_a_quorum_error(quorum_urls: List[str], name: str) -> None:
    client = redlatch.Client.quorum([quorum_urls[0], dead_url(), dead_url()], network_timeout=0.5)
    t0 = time.monotonic()
    with pytest.raises(redlatch.QuorumError) as info:
        client.lock(name, lease=5.0).acquire(timeout=10.0)
    assert time.monotonic() - t0 < 5.0
    assert info.value.code == 4
    assert isinstance(info.value.nodes, list)
    assert not redis.Redis.from_url(quorum_urls[0]).exists(name)  # rolled back


@pytest.mark.asyncio
async def test_async_quorum(quorum_urls: List[str], name: str) -> None:
    client = redlatch.asyncio.Client.quorum(quorum_urls)
    async with client.lock(name, lease=5.0) as lock:
        assert await lock.owned()
    assert not await client.lock(name).locked()
