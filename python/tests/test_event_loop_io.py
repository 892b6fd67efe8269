"""asyncio calls polled on the event loop's thread, their requests on a socket that loop
watches (issue 15): done at once when uncontended, and correct through faults."""

from __future__ import annotations

import asyncio
import gc
import os
import socket
import threading
import time
import pytest
import redis

import redlatch
import redlatch.asyncio
from conftest import wait_until


def _redis_sockets_watched(port: int) -> int:
    """How many sockets connected to ``port`` the running loop watches for reading (through
    its selector: asyncio has no public way to list readers)."""
    loop = asyncio.get_running_loop()
    count = 0
    for key in loop._selector.get_map().values():  # type: ignore[attr-defined]
        if key.data[0] is None:  # (reader, writer) handles
            continue
        try:
            with socket.socket(fileno=os.dup(key.fd)) as s:
                peer = s.getpeername()
        except OSError:
            continue
        if isinstance(peer, tuple) and peer[1] == port:
            count += 1
    return count


async def _pairs_until_watched(lock: redlatch.asyncio.Lock, port: int, within: float = 5.0) -> bool:
    # The loop's connection opens in the background on the first call; until it is ready,
    # calls take the multiplexed connection.
    end = time.monotonic() + within
    while time.monotonic() < end:
        assert await lock.acquire()
        await lock.release()
        if _redis_sockets_watched(port) == 1:
            return True
        await asyncio.sleep(0.01)
    return False


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


@pytest.mark.asyncio
async def test_calls_go_out_on_a_connection_the_event_loop_watches(redis_url: str, r: redis.Redis, name: str) -> None:
    # Before: every call ran as a tokio task on the multiplexed connection and its result
    # came back through the loop's wake-up socket pair: the loop watched no Redis socket.
    lock = redlatch.asyncio.Client(redis_url).lock(name, lease=10.0)
    assert await _pairs_until_watched(lock, _port(redis_url))
    # ... and the calls use it: killing it is seen by the next calls, which go on.
    before = {c["id"] for c in r.client_list(_type="normal")}
    for _ in range(20):
        assert await lock.acquire()
        await lock.release()
    assert {c["id"] for c in r.client_list(_type="normal")} == before
    assert not r.exists(name)


@pytest.mark.asyncio
async def test_calls_go_on_after_the_connections_are_killed(redis_url: str, r: redis.Redis, name: str) -> None:
    lock = redlatch.asyncio.Client(redis_url).lock(name, lease=10.0)
    port = _port(redis_url)
    assert await _pairs_until_watched(lock, port)
    for _ in range(3):
        r.client_kill_filter(_type="normal", skipme=True)
        for _ in range(20):
            assert await lock.acquire()
            await lock.release()
        assert await _pairs_until_watched(lock, port)
    assert not r.exists(name)


@pytest.mark.asyncio
async def test_an_acquire_timed_out_on_a_paused_server_leaves_no_grant(
    redis_url: str, r: redis.Redis, name: str
) -> None:
    # The attempt waits in the paused server's input on the loop's connection, and its undo
    # after the timeout must not leave the grant for its whole lease. (CLIENT PAUSE resumes
    # clients in the order they were paused, so this does not tell which connection the undo
    # took; the core's fault tests check that order with a proxy.)
    client = redlatch.asyncio.Client(redis_url, network_timeout=0.2)
    lock = client.lock(name, lease=30.0)
    assert await _pairs_until_watched(lock, _port(redis_url))
    r.execute_command("CLIENT", "PAUSE", 700, "ALL")
    try:
        assert not await lock.acquire(timeout=0)
    except redlatch.RedisConnectionError:
        pass  # the attempt and its retry both timed out: also what a caller may see
    finally:
        time.sleep(0.75)  # past the pause
    assert wait_until(lambda: not r.exists(name), timeout=3.0), "the timed-out grant was left behind"
    assert await lock.acquire(timeout=0)
    await lock.release()


def test_each_event_loop_gets_its_own_connection_and_closes_it(redis_url: str, r: redis.Redis, name: str) -> None:
    # One client used from several loops in turn (asyncio.run each time, as scripts and
    # some test runners do): each loop gets a connection of its own, and a closed loop's
    # connection is closed once the loop is collected.
    client = redlatch.asyncio.Client(redis_url)
    lock = client.lock(name, lease=10.0)

    def clients() -> int:
        return len(r.client_list(_type="normal"))

    for _ in range(6):
        assert asyncio.run(_pairs_until_watched(lock, _port(redis_url)))
    gc.collect()
    # The multiplexed connection, the last loop's (until its loop is collected), the fixture's.
    assert wait_until(lambda: clients() <= 4, timeout=5.0), f"{clients()} connections"


def test_loops_in_two_threads_share_one_client(redis_url: str, r: redis.Redis, name: str) -> None:
    client = redlatch.asyncio.Client(redis_url)
    counter = f"{name}:counter"
    errors = []

    async def work() -> None:
        lock = client.lock(name, lease=10.0)
        for _ in range(100):
            async with lock:
                value = int(r.get(counter) or 0)
                r.set(counter, value + 1)

    def run() -> None:
        try:
            asyncio.run(work())
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert int(r.get(counter) or 0) == 200
    r.delete(counter)
