"""fork(): the child neither holds nor renews the parent's locks, and its calls work on fresh
connections (or fail clearly), never hang."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
import traceback
from typing import Callable

import pytest
import redis

import redlatch

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()"),
    # Python >= 3.12 warns on fork() in any process with threads (redlatch's runtime threads
    # count); handling that fork is exactly what this file tests.
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning"),
]


def run_in_child(body: Callable[[], None], timeout: float = 20.0) -> None:
    """Forks; the child runs `body` and exits 0 on success. Fails on error or hang."""
    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            body()
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0, "child failed (traceback on stderr)"
            return
        time.sleep(0.02)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("the forked child hung")


def test_child_does_not_own_parents_hold(client: redlatch.Client, r: redis.Redis, name: str) -> None:
    lock = client.lock(name)  # watchdog mode
    rl = client.rlock(name + ":r", lease=30.0)
    lock.acquire()
    rl.acquire()
    parent_id = client.id

    def child() -> None:
        assert client.id != parent_id  # fresh client in the child
        assert lock.owned() is False
        assert rl.owned() is False
        assert lock.locked() is True  # still the parent's, seen on a fresh connection
        assert lock.lost is False
        try:
            lock.release()
            raise AssertionError("release in the child must fail")
        except redlatch.NotOwnedError:
            pass
        try:
            rl.release()
            raise AssertionError("release in the child must fail")
        except redlatch.NotOwnedError:
            pass
        other = client.lock(name + ":child", lease=5.0)
        with other:
            assert other.owned()
        assert client.lock(name).acquire(timeout=0.2) is False  # the parent's hold excludes us
        assert lock.acquire(timeout=0.2) is False  # the inherited object starts empty: it contends
        assert lock.fencing_token is None

    run_in_child(child)
    assert lock.owned() and rl.owned()
    assert r.exists(name)
    lock.release()
    rl.release()


def test_child_works_when_parent_never_connected(redis_url: str, name: str) -> None:
    client = redlatch.Client(redis_url)  # made before fork, never used

    def child() -> None:
        with client.lock(name, lease=5.0) as lock:
            assert lock.owned()

    run_in_child(child)
    with client.lock(name, lease=5.0):
        pass


def test_fork_during_a_blocking_wait_in_another_thread(client: redlatch.Client, name: str) -> None:
    holder = client.lock(name, lease=30.0)
    holder.acquire()
    waiting = threading.Thread(target=lambda: client.lock(name).acquire(timeout=3.0))
    waiting.start()
    time.sleep(0.2)  # the other thread is inside block_on, GIL released

    def child() -> None:
        assert client.lock(name).acquire(timeout=0.2) is False
        with client.lock(name + ":child", lease=5.0):
            pass

    run_in_child(child)
    holder.release()
    waiting.join(10)


@pytest.mark.asyncio
async def test_asyncio_after_fork(redis_url: str, name: str) -> None:
    import redlatch.asyncio

    client = redlatch.asyncio.Client(redis_url)
    async with client.lock(name, lease=5.0):
        pass

    def child() -> None:
        import asyncio

        async def main() -> None:
            async with client.lock(name + ":child", lease=5.0) as lock:
                assert await lock.owned()

        asyncio.run(main())

    run_in_child(child)


CHILD_OUTLIVES_PARENT = textwrap.dedent(
    """
    import os, sys, time, redlatch
    url, name = sys.argv[1], sys.argv[2]
    client = redlatch.Client(url, watchdog_timeout=0.6)
    lock = client.lock(name)            # watchdog mode: renewed every 0.2 s
    lock.acquire()
    pid = os.fork()
    if pid == 0:
        # The child outlives the parent and keeps its runtime busy; it must not renew.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)  # let the test's pipe close when the parent exits
        os.dup2(devnull, 2)
        for _ in range(30):
            client.lock(name + ":child", lease=1.0).acquire(blocking=False)
            time.sleep(0.1)
        os._exit(0)
    print(pid, flush=True)
    os._exit(0)                          # the parent vanishes without releasing
    """
)


def test_child_never_renews_parents_locks(redis_url: str, r: redis.Redis, name: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHILD_OUTLIVES_PARENT, redis_url, name],
        capture_output=True, text=True, timeout=30,
    )
    assert out.returncode == 0, out.stderr
    child = int(out.stdout.strip())
    try:
        time.sleep(1.5)  # two and a half watchdog timeouts
        os.kill(child, 0)  # the child is still alive...
        assert not r.exists(name)  # ...and the parent's lock expired: nobody renewed it
    finally:
        try:
            os.kill(child, 9)
        except ProcessLookupError:
            pass


def test_child_and_the_new_kinds(client: redlatch.Client, r: redis.Redis, name: str) -> None:
    sem = client.semaphore(name + ":sem", permits=2)
    assert sem.acquire()
    psem = client.permit_semaphore(name + ":psem", permits=1)
    permit = psem.acquire(lease=30.0)
    fair = client.fair_lock(name + ":fair")
    assert fair.acquire()

    def child() -> None:
        assert sem.held == 0  # the parent's count is the parent's
        with pytest.raises(redlatch.NotOwnedError):
            sem.release()
        assert sem.acquire(timeout=5)  # fresh connections in the child
        sem.release()
        with pytest.raises(redlatch.NotOwnedError):
            permit.release()  # the parent's permit
        assert not fair.owned() and fair.acquire(blocking=False) is False

    run_in_child(child)
    assert sem.held == 1 and sem.available() == 1
    permit.release()
    assert psem.available() == 1
    fair.release()
    sem.release()
    assert not r.exists(name + ":fair")
