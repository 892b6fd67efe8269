"""Interop with redis-py's own Lock on the same key, in both directions."""

from __future__ import annotations

import threading
import time
from typing import List

import pytest
import redis
from redis.exceptions import LockError as RedisPyLockError
from redis.exceptions import LockNotOwnedError

import redlatch
from conftest import admin


def test_redis_py_holder_excludes_redlatch(client: redlatch.Client, r: redis.Redis, name: str) -> None:
    theirs = r.lock(name, timeout=10)
    assert theirs.acquire(blocking=False)
    ours = client.lock(name, lease=5.0)
    assert ours.locked()
    assert ours.acquire(blocking=False) is False
    assert ours.acquire(timeout=0.2) is False
    with pytest.raises(redlatch.NotOwnedError):
        ours.release()
    with pytest.raises(redlatch.NotOwnedError):
        ours.extend(30.0)
    assert theirs.owned()
    theirs.release()
    assert ours.acquire(blocking=False)
    ours.release()


def test_redlatch_holder_excludes_redis_py(client: redlatch.Client, r: redis.Redis, name: str) -> None:
    ours = client.lock(name, lease=10.0)
    ours.acquire()
    theirs = r.lock(name, timeout=10, blocking_timeout=0.2, sleep=0.01)
    assert theirs.locked()
    assert not theirs.acquire(blocking=False)
    assert not theirs.acquire()
    with pytest.raises(RedisPyLockError):
        theirs.release()  # never acquired
    theirs.local.token = b"forged-token"  # pretend it had: the token check refuses
    with pytest.raises(LockNotOwnedError):
        theirs.release()
    theirs.local.token = b"forged-token"  # release cleared it
    with pytest.raises(LockNotOwnedError):
        theirs.extend(30)
    with pytest.raises(LockNotOwnedError):
        theirs.reacquire()
    assert ours.owned()
    ttl = ours.ttl()
    assert ttl is not None and ttl <= 10.0
    ours.release()
    assert theirs.acquire(blocking=False)
    theirs.release()


def test_expired_redlatch_hold_cannot_release_redis_py_lock(client: redlatch.Client, r: redis.Redis, name: str) -> None:
    ours = client.lock(name, lease=0.2)
    ours.acquire()
    time.sleep(0.4)
    theirs = r.lock(name, timeout=10)
    assert theirs.acquire(blocking=False)
    with pytest.raises(redlatch.NotOwnedError):
        ours.release()
    with pytest.raises(redlatch.NotOwnedError):
        ours.extend(10.0)
    assert theirs.owned()
    theirs.release()


def test_mutual_exclusion_both_directions(client: redlatch.Client, redis_url: str, name: str) -> None:
    counter = name + ":counter"
    rounds = 20
    errors: List[BaseException] = []
    ours = client.lock(name, lease=5.0)

    def redlatch_worker() -> None:
        r = redis.Redis.from_url(admin(redis_url))
        try:
            for _ in range(rounds):
                with ours:
                    v = int(r.get(counter) or 0)
                    time.sleep(0.0005)
                    r.set(counter, v + 1)
        except BaseException as e:  # pragma: no cover
            errors.append(e)

    def redis_py_worker() -> None:
        r = redis.Redis.from_url(admin(redis_url))
        try:
            for _ in range(rounds):
                with r.lock(name, timeout=5, sleep=0.001):
                    v = int(r.get(counter) or 0)
                    time.sleep(0.0005)
                    r.set(counter, v + 1)
        except BaseException as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=redlatch_worker) for _ in range(3)]
    threads += [threading.Thread(target=redis_py_worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    assert int(redis.Redis.from_url(admin(redis_url)).get(counter) or 0) == 6 * rounds
