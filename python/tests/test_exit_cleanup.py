"""Clean-up left to the background (an interrupted wait's undo) finishes before the exit."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import redis
import redlatch

WAITER = textwrap.dedent(
    """
    import sys, redlatch
    client = redlatch.Client(sys.argv[1])
    print("waiting", flush=True)
    try:
        client.fair_lock(sys.argv[2]).acquire()   # waits forever (the default)
    except KeyboardInterrupt:
        sys.exit(130)                             # Ctrl-C: give up and exit at once
    """
)


def test_a_fair_waiter_interrupted_then_exiting_leaves_the_queue(redis_url: str, r: redis.Redis, name: str) -> None:
    # A user trial: the interrupted wait's queue removal was left to the background and
    # dropped with the runtime at exit, so the dead entry kept a free lock from everyone for
    # its 5-minute slot (3 of 5 runs).
    queue = f"redisson_lock_queue:{{{name}}}"
    holder = redlatch.Client(redis_url).fair_lock(name, lease=60.0)
    assert holder.acquire()
    try:
        for _ in range(3):
            child = subprocess.Popen(
                [sys.executable, "-c", WAITER, redis_url, name], stdout=subprocess.PIPE, text=True
            )
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "waiting"
            for _ in range(100):  # until the waiter stands in the queue
                if r.llen(queue) == 1:
                    break
                time.sleep(0.02)
            child.send_signal(signal.SIGINT)
            assert child.wait(timeout=15) == 130
            assert r.lrange(queue, 0, -1) == [], "the exited waiter's entry is gone"
    finally:
        holder.release()
    assert redlatch.Client(redis_url).fair_lock(name, wait=3.0).acquire(), "the free lock is taken at once"
