#!/usr/bin/env python3
"""The Python worker of the stock-oversell demo (examples/demo/README.md, "Worker protocol").

    py_worker.py <url> <unlocked|locked> <worker-id>

Sells items one at a time with a deliberately non-atomic read-modify-write of ``demo:stock``
(GET, sleep 1 ms, SET), under the redlatch lock ``demo:stock-lock`` (lease 5 s, waiting as long
as it takes) in ``locked`` mode. Needs the ``redlatch`` and ``redis`` packages (``make demo``
installs both into target/py-demo-worker).
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import ContextManager, Tuple

import redis

import redlatch

STOCK_KEY = "demo:stock"
SOLD_KEY = "demo:sold"
READY_KEY = "demo:ready"
GO_KEY = "demo:go"
LOCK_NAME = "demo:stock-lock"
LEASE = 5.0  # seconds: far longer than a critical section (about 1 ms)
RACE_WINDOW = 0.001  # seconds between reading and writing the stock


def sell_one(r: "redis.Redis[bytes]") -> Tuple[bool, int, int]:
    """One critical section: (sold?, t0, t1), times in CLOCK_MONOTONIC nanoseconds."""
    t0 = time.monotonic_ns()
    stock = int(r.get(STOCK_KEY) or 0)
    if stock <= 0:
        return False, t0, time.monotonic_ns()
    time.sleep(RACE_WINDOW)
    r.set(STOCK_KEY, stock - 1)
    r.incr(SOLD_KEY)
    return True, t0, time.monotonic_ns()


def main(argv: list) -> int:
    if len(argv) != 4 or argv[2] not in ("unlocked", "locked"):
        print(f"usage: {argv[0]} <url> <unlocked|locked> <worker-id>", file=sys.stderr)
        return 2
    url, mode, worker = argv[1], argv[2], argv[3]
    r = redis.Redis.from_url(url)
    if mode == "locked":
        lock = redlatch.Client(url).lock(LOCK_NAME, lease=LEASE)
        section: ContextManager[object] = lock
    else:
        section = contextlib.nullcontext()

    r.incr(READY_KEY)
    r.blpop([GO_KEY], 0)

    out = sys.stdout
    sold = 0
    n = 0
    while True:
        n += 1
        with section:
            ok, t0, t1 = sell_one(r)
        out.write(f"interval {t0} {t1} w{worker}#{n}\n")
        if not ok:
            break
        sold += 1
    out.write(f"done {worker} {sold}\n")
    out.flush()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Exception as e:  # diagnostics on stderr, non-zero exit
        print(f"py_worker {sys.argv[3] if len(sys.argv) > 3 else '?'}: {e!r}", file=sys.stderr)
        sys.exit(1)
