#!/usr/bin/env python3
"""The cross-language summary of ``make bench``: one table and the ratio targets.

    python3 bench/summary.py ROWS_FILE

Each part of ``make bench`` (the Rust, Python, C and Node benchmarks) appends JSON lines to
the file named by ``REDLATCH_BENCH_ROWS`` while it runs:

* a row: ``{"row": "python lock", "ops": 8123.4, "p50_us": 118.2, "p99_us": 190.0, "n": 40000}``
  (ops/s = operations / time spent in them; latencies in microseconds per operation);
* a target: ``{"target": "python lock p50 <= 1.15x rust lock p50", "row": "python lock",
  "ref": "rust lock", "metric": "p50_us", "max": 1.15}`` (or ``"min"``): the ratio
  ``row.metric / ref.metric`` must stay at or under ``max`` (at or over ``min``);
* an absolute target: ``{"target": "node hand-off p50 <= 0.5 ms", "row": "node hand-off",
  "metric": "p50_us", "at_most": 500}`` (or ``"at_least"``): the row's own figure;
* a note: ``{"note": "load average at start: 1.2 0.9 0.8"}``, printed as is.

Targets are declared by the part that measures their row, so a part added to ``make bench``
brings its rows and targets with it. A target whose rows are missing is a MISS (no figure).
Standard library only. Exit status 0 (a MISS is a figure, not a failure of the run).
"""

from __future__ import annotations

import json
import sys
from typing import Dict, List, Optional


def load(path: str) -> tuple:
    rows: Dict[str, dict] = {}
    targets: List[dict] = []
    notes: List[str] = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            item = json.loads(line)
            if "row" in item and "target" not in item:
                rows[item["row"]] = item  # a part run twice: the later figure counts
            elif "target" in item:
                targets.append(item)
            elif "note" in item:
                notes.append(item["note"])
    return rows, targets, notes


def ratio(rows: Dict[str, dict], target: dict) -> Optional[float]:
    row, ref = rows.get(target["row"]), rows.get(target["ref"])
    if row is None or ref is None or not ref.get(target["metric"]):
        return None
    return float(row[target["metric"]]) / float(ref[target["metric"]])


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    rows, targets, notes = load(sys.argv[1])
    with open("/proc/loadavg", encoding="ascii") as f:
        load_end = " ".join(f.read().split()[:3])
    print("\n== make bench: summary of this run (sequential acquire + release unless named)")
    for note in notes:
        print(f"  {note}")
    print(f"  load average at end: {load_end} (the machine may be shared: compare rows of one run only)")
    print(f"  {'row':<34} {'ops/s':>9} {'p50 us':>9} {'p99 us':>9} {'samples':>8}")
    for key, r in rows.items():
        print(f"  {key:<34} {r['ops']:>9.0f} {r['p50_us']:>9.1f} {r['p99_us']:>9.1f} {r.get('n', 0):>8}")
    for t in targets:
        if "at_most" in t or "at_least" in t:
            row = rows.get(t["row"])
            if row is None or t["metric"] not in row:
                print(f"  [MISS] {t['target']}: no figure (missing row {t['row']})")
                continue
            value = float(row[t["metric"]])
            ok = value <= t["at_most"] if "at_most" in t else value >= t["at_least"]
            print(f"  [{'PASS' if ok else 'MISS'}] {t['target']}: {value:.1f}")
            continue
        value = ratio(rows, t)
        if value is None:
            missing = [k for k in (t["row"], t["ref"]) if k not in rows]
            print(f"  [MISS] {t['target']}: no figure (missing row {', '.join(missing) or t['ref']})")
            continue
        ok = value <= t["max"] if "max" in t else value >= t["min"]
        print(f"  [{'PASS' if ok else 'MISS'}] {t['target']}: {value:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
