"""What the process backend's memory reading costs per process: the files it read before
(``statm``, psutil's ``memory_info``, and ``status`` for ``RssShmem``) against the kernel's
proportional set size (``smaps_rollup``, which walks the process's page tables), for a small
process and for ones holding ``--mib`` MiB (touched anonymous memory, as a loaded model is).

    python benchmarks/pss_cost.py [--mib 300,2048] [--reads N] [--json FILE]
    python benchmarks/pss_cost.py --quick      # small sizes, few reads: what CI runs

Each figure is the median µs of ``--reads`` reads, in ``--rounds`` blocks (the median of the
blocks' medians): another job may share the machine.  Needs no root.  Figures are
measurements of this machine, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HOLD = """
import sys, time
block = bytearray(int(sys.argv[1]) << 20)
for i in range(0, len(block), 4096):
    block[i] = 1
print("ready", flush=True)
time.sleep(600)
"""


def read_file(path: str) -> Callable[[], None]:
    def read() -> None:
        with open(path, "rb") as f:
            f.read()

    return read


def timed(fn: Callable[[], None], reads: int, rounds: int) -> float:
    """Median µs of one call of ``fn``: the median of ``rounds`` blocks' medians."""
    blocks = []
    for _ in range(rounds):
        times = []
        for _ in range(reads):
            t = time.perf_counter_ns()
            fn()
            times.append(time.perf_counter_ns() - t)
        blocks.append(statistics.median(times) / 1e3)
    return statistics.median(blocks)


def measure(pid: int, reads: int, rounds: int) -> dict[str, float]:
    statm, status = read_file(f"/proc/{pid}/statm"), read_file(f"/proc/{pid}/status")

    def both() -> None:  # what the process backend reads for a process's memory
        statm()
        status()

    return {
        "statm_us": timed(statm, reads, rounds),
        "status_us": timed(status, reads, rounds),
        "before_us": timed(both, reads, rounds),
        "smaps_rollup_us": timed(read_file(f"/proc/{pid}/smaps_rollup"), reads, rounds),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", default="300,2048", help="sizes of the held processes, MiB")
    ap.add_argument("--reads", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="small sizes, few reads (CI)")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    if a.quick:
        a.mib, a.reads, a.rounds = "16", 20, 1
    rows: dict[str, dict[str, float]] = {}
    sizes = [int(m) for m in a.mib.split(",")]
    for label, mib in [("small (python, 0 MiB held)", 0)] + [(f"{m} MiB held", m) for m in sizes]:
        p = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(mib)], stdout=subprocess.PIPE, text=True
        )
        try:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
            rows[label] = measure(p.pid, a.reads, a.rounds)
        finally:
            p.kill()
            p.wait()
    print(f"µs per read of one process's file, median; Linux {os.uname().release}")
    head = ("statm", 8), ("status", 8), ("both", 8), ("smaps_rollup", 13), ("ratio", 6)
    print(f"{'process':<28}" + "".join(f" {h:>{w}}" for h, w in head))
    for label, r in rows.items():
        print(
            f"{label:<28} {r['statm_us']:>8.1f} {r['status_us']:>8.1f} {r['before_us']:>8.1f} "
            f"{r['smaps_rollup_us']:>13.1f} {r['smaps_rollup_us'] / r['before_us']:>6.1f}"
        )
    if a.json is not None:
        doc: dict[str, Any] = {"kernel": os.uname().release, "rows": rows}
        a.json.write_text(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
