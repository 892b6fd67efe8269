"""Redis unreachable: lazy connect, then a clear RedisConnectionError, never a hang."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

import redlatch
import redlatch.asyncio


def dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"redis://127.0.0.1:{port}"


def test_unreachable_redis_raises_connection_error() -> None:
    client = redlatch.Client(dead_url(), network_timeout=0.5)  # lazy: no error yet
    t0 = time.monotonic()
    with pytest.raises(redlatch.RedisConnectionError) as info:
        client.lock("x").acquire()  # waits forever for the lock, not for a dead server
    assert time.monotonic() - t0 < 3.0
    assert isinstance(info.value, ConnectionError)
    assert info.value.code == 5
    with pytest.raises(redlatch.RedisConnectionError):
        client.lock("x").locked()
    with pytest.raises(redlatch.RedisConnectionError):
        client.force_unlock("x")


def test_unreachable_redis_async() -> None:
    client = redlatch.asyncio.Client(dead_url(), network_timeout=0.5)

    async def main() -> None:
        with pytest.raises(redlatch.RedisConnectionError):
            await client.lock("x").acquire()
        with pytest.raises(redlatch.RedisConnectionError):
            await client.force_unlock("x")

    asyncio.run(main())
