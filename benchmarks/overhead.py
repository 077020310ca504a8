"""Wall-time overhead of `edgeprof run` over running the same command bare.

Medians of N runs each of: the bare command; `python -m edgeprof --version` (interpreter and
import start-up, which any Python tool pays); `python -m edgeprof run -- CMD`; and, in process,
`edgeprof.profile(CMD)` (no start-up at all).  Overhead beyond start-up is
run − start-up − bare.

    python benchmarks/overhead.py [-n 20] [--json FILE] [-- CMD ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import edgeprof


def timed(argv: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t


def median_ms(f: object, n: int) -> float:
    samples = [f() for _ in range(n)]  # type: ignore[operator]
    return statistics.median(samples) * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=20)
    ap.add_argument("--json", dest="json_path")
    ap.add_argument("command", nargs="*", default=["/bin/true"])
    a = ap.parse_args()
    cmd = a.command or ["/bin/true"]
    py = sys.executable
    timed([py, "-m", "edgeprof", "run", "--", *cmd])  # warm the page cache once
    bare = median_ms(lambda: timed(cmd), a.n)
    startup = median_ms(lambda: timed([py, "-m", "edgeprof", "--version"]), a.n)
    cli = median_ms(lambda: timed([py, "-m", "edgeprof", "run", "--", *cmd]), a.n)

    def lib() -> float:
        t = time.perf_counter()
        edgeprof.profile(cmd)
        return time.perf_counter() - t

    library = median_ms(lib, a.n)
    walls = [edgeprof.profile(cmd).wall_s * 1000 for _ in range(a.n)]
    res = {
        "command": cmd,
        "runs": a.n,
        "bare_ms": bare,
        "edgeprof_startup_ms": startup,
        "edgeprof_run_ms": cli,
        "overhead_beyond_startup_ms": cli - startup - bare,
        "library_profile_ms": library,
        "library_overhead_ms": library - bare,
        "reported_wall_ms": statistics.median(walls),
    }
    for k, v in res.items():
        print(f"{k:28s} {v:.2f}" if isinstance(v, float) else f"{k:28s} {v}")
    if a.json_path:
        with open(a.json_path, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
