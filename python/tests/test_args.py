"""Bad input: clear ValueError / TypeError, and nothing touched in Redis."""

from __future__ import annotations

import asyncio
import math
import os
import subprocess
import sys
import textwrap
import time

import pytest
import redis

import redlatch
import redlatch.asyncio

BAD_DURATIONS = [
    (0, ValueError),
    (0.0, ValueError),
    (-1, ValueError),
    (-0.5, ValueError),
    (math.nan, ValueError),
    (math.inf, ValueError),
    (-math.inf, ValueError),
    (1e300, ValueError),
    (2**53, ValueError),  # seconds: far above 2^53 - 1 ms
    (10**400, ValueError),
    (True, TypeError),
    ("5", TypeError),
    (b"5", TypeError),
    ([], TypeError),
]

BAD_NAMES = [
    ("", ValueError),
    ("x" * 4097, ValueError),
    ("\ud800", ValueError),  # not encodable as UTF-8
    (b"bytes", TypeError),
    (42, TypeError),
    (None, TypeError),
    (["a"], TypeError),
]


@pytest.mark.parametrize("value,exc", BAD_DURATIONS)
def test_bad_lease(client: redlatch.Client, r: redis.Redis, name: str, value: object, exc: type) -> None:
    with pytest.raises(exc):
        client.lock(name, lease=value)  # type: ignore[arg-type]
    with pytest.raises(exc):
        client.rlock(name, lease=value)  # type: ignore[arg-type]
    assert not r.keys(f"*{name}*")


@pytest.mark.parametrize("value,exc", [(v, e) for v, e in BAD_DURATIONS if v != 0])
def test_bad_wait(client: redlatch.Client, r: redis.Redis, name: str, value: object, exc: type) -> None:
    with pytest.raises(exc):
        client.lock(name, wait=value)  # type: ignore[arg-type]
    assert not r.keys(f"*{name}*")


def test_zero_wait_is_one_try(client: redlatch.Client, name: str) -> None:
    lock = client.lock(name, wait=0)
    assert lock.acquire()
    lock.release()


@pytest.mark.parametrize("value,exc", [(v, e) for v, e in BAD_DURATIONS if v not in (0, -1)])
def test_bad_acquire_timeout(client: redlatch.Client, r: redis.Redis, name: str, value: object, exc: type) -> None:
    lock = client.lock(name)
    with pytest.raises(exc):
        lock.acquire(timeout=value)  # type: ignore[arg-type]
    assert not r.keys(f"*{name}*")


def test_bad_timeout_is_reported_before_already_held(client: redlatch.Client, name: str) -> None:
    lock = client.lock(name, lease=10)
    assert lock.acquire()
    try:
        with pytest.raises(ValueError):
            lock.acquire(timeout=-5)
        with pytest.raises(TypeError):
            lock.acquire(timeout="1")  # type: ignore[arg-type]
        with pytest.raises(redlatch.LockError):  # good arguments: the re-acquire is refused
            lock.acquire(timeout=0.01)
    finally:
        lock.release()


def test_huge_duration_message_is_short(client: redlatch.Client, name: str) -> None:
    with pytest.raises(ValueError) as info:
        client.lock(name, lease=1e300)
    assert "1e300" in str(info.value)
    assert len(str(info.value)) < 120


def test_non_blocking_with_timeout_is_refused(client: redlatch.Client, r: redis.Redis, name: str) -> None:
    lock = client.lock(name)
    with pytest.raises(ValueError):
        lock.acquire(blocking=False, timeout=1.0)
    assert lock.acquire(blocking=False, timeout=-1)  # -1 is allowed, as in threading
    lock.release()


@pytest.mark.parametrize("value,exc", BAD_DURATIONS)
def test_bad_extend(client: redlatch.Client, r: redis.Redis, name: str, value: object, exc: type) -> None:
    lock = client.lock(name, lease=5.0)
    with lock:
        with pytest.raises(exc):
            lock.extend(value)  # type: ignore[arg-type]
        ttl = lock.ttl()
        assert ttl is not None and ttl > 4.0  # untouched


@pytest.mark.parametrize("value,exc", BAD_DURATIONS)
def test_bad_extend_is_reported_before_not_held(client: redlatch.Client, value: object, exc: type) -> None:
    # A user trial of stop 44: extend(nan) on a lock not held said NotOwnedError.
    with pytest.raises(exc):
        client.lock("never-held").extend(value)  # type: ignore[arg-type]


def test_odd_options_of_the_family_are_refused_where_given(client: redlatch.Client, r: redis.Redis) -> None:
    # User trial of stop 44: each was accepted, or refused in other words or later.
    before = r.dbsize()
    with pytest.raises(TypeError, match="fenced must be a bool"):
        client.lock("x", fenced="no")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="read locks cannot be fenced"):
        client.rw_lock("x").read(fenced=True)
    with pytest.raises(UnicodeEncodeError):
        client.multi_lock(["a", "\ud800"])
    with pytest.raises(TypeError, match="permits must be an int"):
        client.semaphore("x").release(None)  # type: ignore[arg-type]
    assert r.dbsize() == before


@pytest.mark.parametrize("value,exc", BAD_NAMES)
def test_bad_names(client: redlatch.Client, r: redis.Redis, value: object, exc: type) -> None:
    before = r.dbsize()
    with pytest.raises(exc):
        client.lock(value)  # type: ignore[arg-type]
    with pytest.raises(exc):
        client.rlock(value)  # type: ignore[arg-type]
    with pytest.raises(exc):
        client.force_unlock(value)  # type: ignore[arg-type]
    assert r.dbsize() == before


def test_long_name_within_limit(client: redlatch.Client, name: str) -> None:
    lock = client.lock(name + "x" * (4096 - len(name)))
    with lock:
        assert lock.owned()


@pytest.mark.parametrize(
    "kwargs,exc",
    [
        ({"watchdog_timeout": 0.001}, ValueError),
        ({"watchdog_timeout": 0}, ValueError),
        ({"watchdog_timeout": math.nan}, ValueError),
        ({"network_timeout": -1}, ValueError),
        ({"network_timeout": 0}, ValueError),
        ({"poll_interval": math.inf}, ValueError),
        ({"poll_interval": "fast"}, TypeError),
        ({"sync_replicas": -1}, ValueError),
        ({"sync_replicas": 1.5}, TypeError),  # a user trial of stop 42 got ValueError
        ({"sync_replicas": True}, TypeError),
    ],
)
def test_bad_client_settings(redis_url: str, kwargs: dict, exc: type) -> None:
    with pytest.raises(exc):
        redlatch.Client(redis_url, **kwargs)
    with pytest.raises(exc):
        redlatch.asyncio.Client(redis_url, **kwargs)


def test_bad_urls() -> None:
    with pytest.raises(ValueError):
        redlatch.Client("http://127.0.0.1:6379")
    with pytest.raises(ValueError):
        redlatch.Client("not a url")
    with pytest.raises(TypeError):
        redlatch.Client(b"redis://127.0.0.1")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        redlatch.Client.quorum([])
    with pytest.raises(TypeError):
        redlatch.Client.quorum("redis://127.0.0.1:1")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        redlatch.Client.quorum(["redis://127.0.0.1:1", 2])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        redlatch.Client.quorum(["redis://127.0.0.1:1", "nope://x"])
    with pytest.raises(ValueError, match="needs its password too"):
        redlatch.Client("redis://alice@127.0.0.1:1")  # no AUTH would be sent (stop 42)


def test_redis_py_db_parameter_selects_the_same_database(redis_url: str, name: str) -> None:
    # A user trial: `?db=3` (redis-py's form) was ignored, so a redis-py Lock (database 3) and
    # a redlatch lock (database 0) on the same URL and key did not exclude each other.
    base = redis_url.split("?")[0].rstrip("/")
    base = base.rsplit("/", 1)[0] if base.count("/") > 2 else base
    url = f"{base}?db=3"
    lock = redlatch.Client(url).lock(name, lease=10.0)
    assert lock.acquire(blocking=False)
    try:
        # Where redis-py's client of the same URL looks (plain commands: the ACL user of the
        # suite may not load redis-py's own scripts).
        assert redis.Redis.from_url(url).exists(name) == 1
        assert redis.Redis.from_url(base).exists(name) == 0
    finally:
        lock.release()
    for bad in (f"{base}?dbx=3", f"{base}/2?db=5", f"{base}/2147483648"):
        with pytest.raises(ValueError):
            redlatch.Client(bad)


@pytest.mark.parametrize("db", ["16", "-1"])
def test_a_database_the_server_lacks_is_a_value_error_at_once(redis_url: str, name: str, db: str) -> None:
    # A user trial of stop 39: a plain LockError after the acquire had retried its whole wait.
    base = redis_url.split("?")[0].rstrip("/")
    base = base.rsplit("/", 1)[0] if base.count("/") > 2 else base
    client = redlatch.Client(f"{base}/{db}")
    started = time.monotonic()
    with pytest.raises(ValueError, match="no database of the URL's number"):
        client.lock(name, wait=30).acquire()
    assert time.monotonic() - started < 15, "retried"


def test_fenced_quorum_is_refused(quorum_urls: list) -> None:
    with pytest.raises(ValueError):
        redlatch.Client.quorum(quorum_urls).lock("x", fenced=True)


def test_async_bad_input(redis_url: str, name: str) -> None:
    client = redlatch.asyncio.Client(redis_url)
    with pytest.raises(ValueError):
        client.lock("")
    with pytest.raises(TypeError):
        client.lock(7)  # type: ignore[arg-type]
    lock = client.lock(name)

    async def main() -> None:
        with pytest.raises(ValueError):
            await lock.acquire(timeout=math.nan)
        with pytest.raises(ValueError):
            await lock.acquire(blocking=False, timeout=3)
        with pytest.raises(redlatch.NotOwnedError):
            await lock.extend(1.0)
        assert await lock.acquire()
        try:
            with pytest.raises(ValueError):  # bad arguments come before "already held"
                await lock.acquire(timeout=-5)
            with pytest.raises(redlatch.LockError):
                await lock.acquire(timeout=0.01)
        finally:
            await lock.release()
        with pytest.raises(TypeError, match="permits must be an int"):
            await client.semaphore(name).release(None)  # type: ignore[arg-type]

    asyncio.run(main())


def test_async_lock_needs_a_task(redis_url: str, name: str) -> None:
    lock = redlatch.asyncio.Client(redis_url).lock(name)
    assert lock.fencing_token is None and lock.lost is False
    with pytest.raises(RuntimeError):
        lock.acquire().send(None)


@pytest.mark.parametrize("value", ["two", "0", "17"])
def test_a_bad_worker_threads_variable_is_a_value_error(redis_url: str, value: str) -> None:
    # Before stop 38 it was clamped or ignored in silence (the same rule in every binding now:
    # redlatch::worker_threads_from_env). The runtime starts on the first call.
    script = textwrap.dedent(
        """
        import sys, redlatch
        try:
            redlatch.Client(sys.argv[1]).lock("wt").locked()
        except ValueError as e:
            print("ValueError:", e)
        """
    )
    env = {**os.environ, "REDLATCH_WORKER_THREADS": value}
    out = subprocess.run(
        [sys.executable, "-c", script, redis_url], env=env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ValueError: REDLATCH_WORKER_THREADS must be a whole number from 1 to 16"), out.stdout
    assert repr(value) in out.stdout or f'"{value}"' in out.stdout, out.stdout
