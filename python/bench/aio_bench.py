"""The asyncio rows of ``bench.py``: redlatch.asyncio against redis-py's asyncio ``Lock``.

All rows run on one event loop (the default asyncio loop), interleaved in short slices like
the sync rows, so noise from the rest of the machine hits them alike:

* floor: redis-py asyncio ``PING`` and ``SET NX PX`` + ``EVALSHA`` compare-and-delete;
* physical floor: the same two commands through a bare ``asyncio.Protocol`` on one socket
  (encoded by hand, each reply awaited as a future): what any asyncio code pays for the two
  round trips on this loop, with no client library at all;
* ``redlatch.asyncio`` lease lock: ``await acquire()`` + ``await release()``;
* redis-py ``redis.asyncio`` ``Lock``: the same pair;
* diagnostic: one ``await lock.locked()`` (one round trip through the future bridge), to split
  a pair into per-call and per-round-trip cost.
"""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable, Dict, List, Optional

import redis.asyncio as aredis

CAD = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"


def _command(*args: str) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a.encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(parts)


class _Pair(asyncio.Protocol):
    """One connection, one command at a time: the reply is whatever ends in CRLF (enough
    for ``+OK``, ``:1`` and ``$-1``)."""

    def __init__(self) -> None:
        self.transport: Optional[asyncio.Transport] = None
        self.reply: Optional["asyncio.Future[bytes]"] = None
        self.buffer = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.buffer.endswith(b"\r\n") and self.reply is not None:
            reply, self.reply, self.buffer = self.reply, None, b""
            reply.set_result(data)

    def call(self, command: bytes) -> "asyncio.Future[bytes]":
        assert self.transport is not None
        self.reply = asyncio.get_running_loop().create_future()
        self.transport.write(command)
        return self.reply


async def _ops(url: str) -> Dict[str, Callable[[], Awaitable[None]]]:
    import redlatch.asyncio as ral

    r = aredis.Redis.from_url(url)
    cad = r.register_script(CAD)
    sha = await r.script_load(CAD)
    host, port = r.connection_pool.connection_kwargs["host"], r.connection_pool.connection_kwargs["port"]
    _, proto = await asyncio.get_running_loop().create_connection(_Pair, host, port)

    async def protocol_pair() -> None:
        await proto.call(_command("SET", "bench:aio:proto", "t", "NX", "PX", "10000"))
        await proto.call(_command("EVALSHA", sha, "1", "bench:aio:proto", "t"))

    async def ping() -> None:
        await r.ping()

    async def set_cad() -> None:
        await r.set("bench:aio:floor", "t", nx=True, px=10000)
        await cad(keys=["bench:aio:floor"], args=["t"])

    ours = ral.Client(url).lock("bench:aio:redlatch", lease=10.0)

    async def redlatch_pair() -> None:
        if not await ours.acquire():
            raise RuntimeError("not acquired")
        await ours.release()

    async def redlatch_call() -> None:
        if await ours.locked():
            raise RuntimeError("the bench lock is held")

    theirs = r.lock("bench:aio:redis-py", timeout=10)

    async def redis_py_pair() -> None:
        if not await theirs.acquire():
            raise RuntimeError("not acquired")
        await theirs.release()

    return {
        "asyncio floor: PING": ping,
        "asyncio floor: SET NX + EVALSHA": set_cad,
        "asyncio floor: bare protocol pair": protocol_pair,
        "redlatch.asyncio": redlatch_pair,
        "redis-py asyncio Lock": redis_py_pair,
        "(diag) redlatch.asyncio locked()": redlatch_call,
    }


async def _measure(url: str, slice_s: float, rounds: int) -> Dict[str, List[float]]:
    ops = await _ops(url)
    samples: Dict[str, List[float]] = {k: [] for k in ops}
    clock = time.perf_counter
    for fn in ops.values():  # warm up connections and script caches
        for _ in range(200):
            await fn()
    for _ in range(rounds):
        for key, fn in ops.items():
            out = samples[key]
            end = clock() + slice_s
            while True:
                t0 = clock()
                await fn()
                t1 = clock()
                out.append(t1 - t0)
                if t1 >= end:
                    break
    return samples


def uncontended(url: str, slice_s: float, rounds: int) -> Dict[str, List[float]]:
    """Latency samples (seconds) per row."""
    return asyncio.run(_measure(url, slice_s, rounds))
