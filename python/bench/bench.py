#!/usr/bin/env python3
"""redlatch vs redis-py ``Lock`` vs python-redis-lock, in one run on the same Redis.

    python bench.py [--quick] [--url redis://...] [--procs 8] [--seconds 3]

Starts its own redis-server on a free 127.0.0.1 port unless ``--url`` is given, and prints:

1. the floor: redis-py ``PING`` and ``SET NX PX`` + ``EVALSHA`` compare-and-delete (what one
   acquire + release needs) on one connection;
2. uncontended acquire + release on one thread: ops/s, p50 and p99 latency per pair. The
   libraries run interleaved in short slices, so noise hits them alike; then the same on one
   asyncio event loop (``aio_bench.py``): redlatch.asyncio against redis-py's asyncio Lock;
3. contended: ``--procs`` processes loop for ``--seconds`` on one lock: acquire, critical
   section (one ``INCR`` on Redis), release, then ``--think-ms`` of work outside the lock.
   Throughput (acquisitions/s, all processes), wait p50/p99/p99.9 (acquire call to return) and
   hand-off latency p50/p99 (a holder starts releasing -> a process that was already waiting
   returns from acquire; CLOCK_MONOTONIC is shared by the processes).

redis-py's Lock polls while waiting (``sleep``, default 0.1 s); it is measured with its default
and with ``sleep=0.001``. python-redis-lock waits on a BLPOP signal list.

With ``REDLATCH_BENCH_ROWS=<file>`` (set by ``make bench``), the uncontended rows and the
issue-15 ratio targets are appended to that file as JSON lines (``bench/summary.py``).

With ``REDLATCH_BENCH_RUST_TURNS=<path of the Rust bench example>`` (set by ``make py-bench``),
the Rust ``lock`` row is measured here too, as one more library taking its turn in the
uncontended loop (``core/examples/bench/turns.rs``): the "Python lock p50 <= 1.15x Rust lock
p50" target then compares the two under the same machine state, not against the Rust phase
of ``make bench`` minutes earlier.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional, Tuple

import redis

import aio_bench

LIBS_UNCONTENDED = [
    "redlatch",
    "redlatch-watchdog",
    "redlatch-rlock",
    "redlatch-fair",
    "redlatch-read",
    "redlatch-semaphore",
    "redis-py",
    "python-redis-lock",
]
LIBS_CONTENDED = ["redlatch", "redis-py", "redis-py-1ms", "python-redis-lock"]


# ---------------------------------------------------------------- lock factories


def make_lock(lib: str, url: str, name: str) -> Tuple[Callable[[], bool], Callable[[], None]]:
    """(acquire, release) for one library; acquire blocks until acquired."""
    if lib in ("redlatch-rlock", "redlatch-fair", "redlatch-read"):
        import redlatch

        client = redlatch.Client(url)
        kind = {"redlatch-rlock": client.rlock, "redlatch-fair": client.fair_lock,
                "redlatch-read": lambda n, lease: client.rw_lock(n, lease=lease).read()}[lib]
        held = kind(name, lease=10.0)
        return held.acquire, held.release
    if lib == "redlatch-semaphore":
        import redlatch

        sem = redlatch.Client(url).semaphore(name, permits=1)
        return sem.acquire, sem.release
    if lib.startswith("redlatch"):
        import redlatch

        lease = None if lib == "redlatch-watchdog" else 10.0
        lock = redlatch.Client(url).lock(name, lease=lease)
        return lock.acquire, lock.release
    if lib.startswith("redis-py"):
        r = redis.Redis.from_url(url)
        sleep = 0.001 if lib == "redis-py-1ms" else 0.1
        rl = r.lock(name, timeout=10, sleep=sleep)
        return rl.acquire, rl.release
    if lib == "python-redis-lock":
        import redis_lock

        r = redis.Redis.from_url(url)
        pl = redis_lock.Lock(r, name, expire=10)
        return pl.acquire, pl.release
    raise ValueError(lib)


# ---------------------------------------------------------------- helpers


def pct(values: List[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = min(len(s) - 1, max(0, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


RUST_TURNS_ROW = "Rust lock (its turns, turns.rs)"

# Row ids in the REDLATCH_BENCH_ROWS file (bench/summary.py) for the rows measured here.
EXPORTED = {
    "floor: PING": "python redis-py PING",
    "floor: SET NX + EVALSHA": "python redis-py raw pair",
    "redlatch": "python lock",
    "redlatch-rlock": "python rlock",
    "redlatch-fair": "python fair lock",
    "redlatch-read": "python read lock",
    "redlatch-semaphore": "python semaphore",
    "redis-py": "python redis-py Lock",
    "(diag) redlatch locked()": "python one call",
    "asyncio floor: SET NX + EVALSHA": "asyncio redis-py raw pair",
    "asyncio floor: bare protocol pair": "asyncio bare protocol pair",
    "redlatch.asyncio": "asyncio lock",
    "redis-py asyncio Lock": "asyncio redis-py Lock",
    "(diag) redlatch.asyncio locked()": "asyncio one call",
    RUST_TURNS_ROW: "rust lock (python turns)",
}

# Issue 15's targets for these rows: (what, row, reference row, metric, "max" or "min", bound).
TARGETS = [
    ("Python lock p50 <= 1.15x Rust lock p50", "python lock", "rust lock", "p50_us", "max", 1.15),
    ("Python lock ops/s >= 1.3x redis-py Lock", "python lock", "python redis-py Lock", "ops", "min", 1.3),
    ("asyncio lock ops/s >= 1.3x redis-py asyncio Lock", "asyncio lock", "asyncio redis-py Lock", "ops",
     "min", 1.3),
    # Issues 12 and 13: the new kinds side by side with rlock in one run.
    ("Python fair lock p50 <= 1.15x Python rlock p50", "python fair lock", "python rlock", "p50_us", "max", 1.15),
    ("Python read lock p50 <= 1.15x Python rlock p50", "python read lock", "python rlock", "p50_us", "max", 1.15),
    ("Python semaphore p50 <= 1.15x Python rlock p50", "python semaphore", "python rlock", "p50_us", "max", 1.15),
]


def export(results: Dict[str, Dict[str, float]], counts: Dict[str, int]) -> None:
    """Appends the exported rows and the targets to $REDLATCH_BENCH_ROWS, if set."""
    path = os.environ.get("REDLATCH_BENCH_ROWS")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        for key, row in EXPORTED.items():
            if key in results:
                r = results[key]
                f.write(json.dumps({"row": row, "ops": round(r["ops"], 1), "p50_us": round(r["p50"] * 1e6, 2),
                                    "p99_us": round(r["p99"] * 1e6, 2), "n": counts[key]}) + "\n")
        floor, theirs = results.get("asyncio floor: bare protocol pair"), results.get("redis-py asyncio Lock")
        if floor and theirs:
            f.write(json.dumps({"note": "asyncio floor: a bare asyncio protocol doing SET NX PX + EVALSHA: "
                                        f"{floor['ops'] / theirs['ops']:.2f}x redis-py asyncio Lock"}) + "\n")
        for what, row, ref, metric, kind, bound in TARGETS:
            if ref == "rust lock" and RUST_TURNS_ROW in results:
                what, ref = f"{what} (Rust in the same turns)", EXPORTED[RUST_TURNS_ROW]
            f.write(json.dumps({"target": what, "row": row, "ref": ref, "metric": metric, kind: bound}) + "\n")


def summarize(samples: Dict[str, List[float]], results: Dict[str, Dict[str, float]],
              counts: Dict[str, int]) -> None:
    """Fills ``results`` (ops/s, p50, p99 in seconds) and ``counts`` and prints one row each."""
    for key, lat in samples.items():
        results[key] = {"ops": len(lat) / sum(lat), "p50": pct(lat, 50), "p99": pct(lat, 99)}
        counts[key] = len(lat)
        print(f"  {key:32s} {results[key]['ops']:9.0f} ops/s   p50 {us(results[key]['p50'])}   "
              f"p99 {us(results[key]['p99'])}")


def us(seconds: float) -> str:
    return f"{seconds * 1e6:8.0f} us"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:8.2f} ms"


class Server:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="redlatch-bench-")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis(port=self.port).ping()
                break
            except redis.exceptions.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.url = f"redis://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)


# ---------------------------------------------------------------- 1 + 2: floor, uncontended

CAD = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"


def floor_ops(url: str) -> Tuple[Callable[[], None], Callable[[], None]]:
    r = redis.Redis.from_url(url)
    cad = r.register_script(CAD)

    def ping() -> None:
        r.ping()

    def set_cad() -> None:
        r.set("bench:floor", "t", nx=True, px=10000)
        cad(keys=["bench:floor"], args=["t"])

    return ping, set_cad


class RustTurns:
    """The Rust ``lock`` row, served by ``bench --lock-turns URL`` (core/examples/bench/turns.rs):
    one line with a slice length in ms out, one line with the pairs' latencies in ns back."""

    def __init__(self, binary: str, url: str) -> None:
        self.proc = subprocess.Popen([binary, "--lock-turns", url], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def turn(self, seconds: float) -> List[float]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{max(1, round(seconds * 1000))}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the Rust lock turns helper ended (exit status {self.proc.wait(10)})")
        return [int(ns) / 1e9 for ns in line.split()]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)


def uncontended(url: str, slice_s: float, rounds: int) -> Dict[str, List[float]]:
    ping, set_cad = floor_ops(url)
    ops: Dict[str, Callable[[], None]] = {"floor: PING": ping, "floor: SET NX + EVALSHA": set_cad}
    for lib in LIBS_UNCONTENDED:
        acquire, release = make_lock(lib, url, f"bench:uncontended:{lib}")

        def pair(a: Callable[[], bool] = acquire, r: Callable[[], None] = release) -> None:
            if not a():
                raise RuntimeError("not acquired")
            r()

        ops[lib] = pair
    import redlatch

    probe = redlatch.Client(url).lock("bench:uncontended:one-call", lease=10.0)

    def locked() -> None:
        if probe.locked():
            raise RuntimeError("the bench lock is held")

    ops["(diag) redlatch locked()"] = locked
    samples: Dict[str, List[float]] = {k: [] for k in ops}
    binary = os.environ.get("REDLATCH_BENCH_RUST_TURNS")
    rust = RustTurns(binary, url) if binary else None
    clock = time.perf_counter
    for fn in ops.values():  # warm up connections and script caches
        for _ in range(200):
            fn()
    if rust is not None:
        rust.turn(slice_s)  # its warm-up
        samples[RUST_TURNS_ROW] = []
    for _ in range(rounds):
        for key, fn in ops.items():
            out = samples[key]
            end = clock() + slice_s
            while True:
                t0 = clock()
                fn()
                t1 = clock()
                out.append(t1 - t0)
                if t1 >= end:
                    break
        if rust is not None:
            samples[RUST_TURNS_ROW].extend(rust.turn(slice_s))
    if rust is not None:
        rust.close()
    return samples


# ---------------------------------------------------------------- 3: contended


def worker(lib: str, url: str, name: str, start_at_ns: int, seconds: float, think_ms: float) -> None:
    """One contending process: prints one JSON line of its samples."""
    acquire, release = make_lock(lib, url, name)
    r = redis.Redis.from_url(url)
    r.ping()
    acquire()
    release()  # connect and load scripts before the start
    delay = (start_at_ns - time.monotonic_ns()) / 1e9
    if delay > 0:
        time.sleep(delay)
    end = time.monotonic_ns() + int(seconds * 1e9)
    rows = []
    now = time.monotonic_ns
    while True:
        t_req = now()
        if t_req >= end:
            break
        if not acquire():
            raise RuntimeError("not acquired")
        t_acq = now()
        r.incr(name + ":counter")
        t_rel = now()
        release()
        rows.append((t_req, t_acq, t_rel))
        if think_ms:
            time.sleep(think_ms / 1000.0)
    print(json.dumps({"pid": os.getpid(), "rows": rows}), flush=True)


def contended(url: str, lib: str, procs: int, seconds: float, think_ms: float) -> Dict[str, float]:
    name = f"bench:contended:{lib}:{time.monotonic_ns()}"
    start_at = time.monotonic_ns() + int(1.5e9)  # time for every process to start and connect
    args = [sys.executable, os.path.abspath(__file__), "--worker", lib, url, name, str(start_at),
            str(seconds), str(think_ms)]
    children = [subprocess.Popen(args, stdout=subprocess.PIPE, text=True) for _ in range(procs)]
    holds: List[Tuple[int, int, int, int]] = []  # (t_acq, t_req, t_rel, proc)
    for i, child in enumerate(children):
        out, _ = child.communicate(timeout=seconds + 120)
        if child.returncode != 0:
            raise RuntimeError(f"{lib} worker failed")
        for t_req, t_acq, t_rel in json.loads(out)["rows"]:
            holds.append((t_acq, t_req, t_rel, i))
    holds.sort()
    waits = [(h[0] - h[1]) / 1e9 for h in holds]
    handoffs = []
    for prev, nxt in zip(holds, holds[1:]):
        if nxt[3] != prev[3] and nxt[1] < prev[2]:  # another process, already waiting
            handoffs.append((nxt[0] - prev[2]) / 1e9)
    counter = int(redis.Redis.from_url(url).get(name + ":counter") or 0)
    return {
        "acquisitions": len(holds),
        "exact": float(counter == len(holds)),
        "throughput": len(holds) / seconds,
        "wait_p50": pct(waits, 50),
        "wait_p99": pct(waits, 99),
        "wait_p999": pct(waits, 99.9),
        "wait_max": max(waits) if waits else float("nan"),
        "handoff_p50": pct(handoffs, 50),
        "handoff_p99": pct(handoffs, 99),
        "handoffs": len(handoffs),
    }


# ---------------------------------------------------------------- main


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _, _, lib, url, name, start_at, seconds, think = sys.argv
        worker(lib, url, name, int(start_at), float(seconds), float(think))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="use this Redis instead of starting one")
    ap.add_argument("--quick", action="store_true", help="short run (about 30 s)")
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=None, help="contended run length per library")
    ap.add_argument("--think-ms", type=float, default=0.0, help="work outside the lock per iteration")
    ap.add_argument("--json", action="store_true", help="also print the figures as JSON")
    ap.add_argument("--uncontended-only", action="store_true", help="skip the contended runs")
    opts = ap.parse_args()
    seconds = opts.seconds or (2.0 if opts.quick else 5.0)
    slice_s, rounds = (0.2, 4) if opts.quick else (0.5, 8)

    server: Optional[Server] = None
    url = opts.url
    if url is None:
        server = Server()
        url = server.url
    try:
        import redlatch

        print(f"redlatch {redlatch.__version__}, redis-py {redis.__version__}, Python {sys.version.split()[0]}, "
              f"{os.cpu_count()} CPUs; Redis at {url}")
        print("\n== uncontended acquire + release (one thread) ==")
        results: Dict[str, Dict[str, float]] = {}
        counts: Dict[str, int] = {}
        summarize(uncontended(url, slice_s, rounds), results, counts)
        base = results["redis-py"]["ops"]
        print(f"  redlatch / redis-py Lock: {results['redlatch']['ops'] / base:.2f}x "
              f"(watchdog mode {results['redlatch-watchdog']['ops'] / base:.2f}x)  [target >= 2x]")
        if RUST_TURNS_ROW in results:
            print(f"  redlatch / Rust lock p50 (same turns): "
                  f"{results['redlatch']['p50'] / results[RUST_TURNS_ROW]['p50']:.2f}x  [target <= 1.15x]")
        print("\n== uncontended acquire + release (asyncio, one task on the default event loop) ==")
        summarize(aio_bench.uncontended(url, slice_s, rounds), results, counts)
        print(f"  redlatch.asyncio / redis-py asyncio Lock: "
              f"{results['redlatch.asyncio']['ops'] / results['redis-py asyncio Lock']['ops']:.2f}x  [target >= 1.3x]")
        print(f"  floor: a bare asyncio protocol doing the same two commands: "
              f"{results['asyncio floor: bare protocol pair']['ops'] / results['redis-py asyncio Lock']['ops']:.2f}x "
              f"redis-py asyncio Lock")
        export(results, counts)
        if opts.uncontended_only:
            return 0

        print(f"\n== contended: {opts.procs} processes, {seconds:g} s each, critical section = one INCR, "
              f"think {opts.think_ms:g} ms ==")
        cont: Dict[str, Dict[str, float]] = {}
        for lib in LIBS_CONTENDED:
            c = cont[lib] = contended(url, lib, opts.procs, seconds, opts.think_ms)
            print(f"  {lib:18s} {c['throughput']:8.0f} acq/s  wait p50 {ms(c['wait_p50'])} p99 {ms(c['wait_p99'])} "
                  f"p99.9 {ms(c['wait_p999'])} max {ms(c['wait_max'])}  hand-off p50 {ms(c['handoff_p50'])} "
                  f"p99 {ms(c['handoff_p99'])}  {'exact' if c['exact'] else 'COUNTER MISMATCH'}")
        peers = [lib for lib in LIBS_CONTENDED if not lib.startswith("redlatch")]
        best = max(peers, key=lambda lib: cont[lib]["throughput"])
        ours = cont["redlatch"]
        print(f"  redlatch / best peer ({best}): {ours['throughput'] / cont[best]['throughput']:.2f}x throughput "
              f"[target >= 2x]; wait p99.9 {ours['wait_p999'] * 1e3:.2f} ms [target <= 50 ms]; "
              f"hand-off p50 {ours['handoff_p50'] * 1e3:.3f} ms [target <= 1 ms]")
        # Peers whose tail stays within the 50 ms bound: a barging peer reaches its throughput by
        # leaving waiters behind (redis-py's default wait p99.9 is hundreds of ms).
        bounded = [lib for lib in peers if cont[lib]["wait_p999"] <= 0.050]
        if bounded:
            fair = max(bounded, key=lambda lib: cont[lib]["throughput"])
            print(f"  redlatch / best peer with wait p99.9 <= 50 ms ({fair}): "
                  f"{ours['throughput'] / cont[fair]['throughput']:.2f}x throughput")
        # The ceiling of any hand-off that goes through Redis round trips: the same loop in one
        # process, with nobody to hand off to.
        solo = contended(url, "redlatch", 1, seconds, opts.think_ms)
        print(f"  ceiling: the same loop in 1 process (no contention): {solo['throughput']:.0f} acq/s = "
              f"{solo['throughput'] / cont[best]['throughput']:.2f}x {best}")
        if opts.json:
            print(json.dumps({"uncontended": results, "contended": cont}, indent=1))
    finally:
        if server is not None:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
