"""Processes on one counter: exact under the lock."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import redis
from conftest import admin

WORKER = textwrap.dedent(
    """
    import sys, time, redis, redlatch
    url, lock_name, counter, rounds, admin_url = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    r = redis.Redis.from_url(admin_url)
    lock = redlatch.Client(url).lock(lock_name, lease=5.0)
    for _ in range(rounds):
        with lock:
            value = int(r.get(counter) or 0)
            time.sleep(0.0005)
            r.set(counter, value + 1)
    """
)


def test_processes_on_one_counter_exact(redis_url: str, r: redis.Redis, name: str) -> None:
    counter = name + ":counter"
    procs, rounds = 4, 40
    workers = [
        subprocess.Popen([sys.executable, "-c", WORKER, redis_url, name, counter, str(rounds), admin(redis_url)])
        for _ in range(procs)
    ]
    for w in workers:
        assert w.wait(120) == 0
    assert int(r.get(counter) or 0) == procs * rounds
