"""What ``edgeprof.iteration()`` costs the workload, and where a quota's stalls can fall.

Each event is one ``write()`` of a line to a pipe that edgeprof's events thread reads.

1. **Per-iteration cost.** A loop of N iterations, each spinning W µs of its thread's CPU
   time inside ``edgeprof.iteration()``, timed by the loop itself: run bare (edgeprof not
   running it: the no-op path) and under ``edgeprof run`` (no limits).  The difference per
   iteration is what the events cost the loop.  Beside it, the median time of the write
   itself (from just before ``__exit__`` stamps its end to the return of ``write``: outside
   the iteration's own time), and the peer: a plain ``os.write`` of a line of the same size
   to a pipe whose reader, another process, sleeps in ``poll`` between lines, as edgeprof's
   does.  With iterations faster than the reader, it never sleeps and a write wakes no one;
   with slow ones, each write wakes it, which costs what waking a process costs here.
2. **Stalls outside the iterations.** The same loop of 8 ms and of 1 ms iterations under
   ``--cpus 0.5`` (edgeprof's 5 ms period): the kernel stalls the group at the first
   accounting point after its quota is spent (a tick, a switch, a wake-up it makes),
   wherever the code is.  A stall that falls in the write belongs to no iteration (under a
   quota edgeprof's reader polls the pipe, so that a write wakes no one).  Counted: writes
   that took over 1 ms (a stall, or any other delay: preemption by other work counts too),
   their time against the run's throttled time, and the share of the loop's time spent in
   writes (what a stall falling anywhere at random would hit in proportion).

    python benchmarks/events.py [--json FILE]      # ~40 s (39 s, 2026-11-30)
    python benchmarks/events.py --quick            # ~5 s: what CI runs

Needs root (cgroups).  Figures are this machine's, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from edgeprof.measure.contention import held_by_others

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable

LOOP = r"""
import json, os, sys, time
sys.path.insert(0, {repo!r})
import edgeprof
n, work = int(sys.argv[1]), float(sys.argv[2]) / 1e6
sends = []
start = time.monotonic()
for _ in range(n):
    it = edgeprof.iteration()
    it.__enter__()
    t = time.thread_time()
    while time.thread_time() - t < work:
        pass
    t1 = time.monotonic()
    it.__exit__(None, None, None)
    sends.append(time.monotonic() - t1)
wall = time.monotonic() - start
json.dump({{"wall": wall, "sends": sends, "active": edgeprof.active()}}, open(sys.argv[3], "w"))
"""


def loop(tmp: Path, n: int, work_us: float, *edgeprof_args: str) -> dict[str, Any]:
    """The loop's own figures; under ``edgeprof run EDGEPROF_ARGS`` unless none are given
    (then bare), with edgeprof's result added under ``result``."""
    script, out = tmp / "loop.py", tmp / "loop.json"
    script.write_text(LOOP.format(repo=str(REPO)))
    cmd = [PY, str(script), str(n), str(work_us), str(out)]
    result = None
    if edgeprof_args:
        res = tmp / "res"
        run = [PY, "-m", "edgeprof", "run", *edgeprof_args, "--out", str(res), "--", *cmd]
        subprocess.run(run, check=True, capture_output=True, cwd=tmp)
        result = json.loads((res / "result.json").read_text())
    else:
        subprocess.run(cmd, check=True, capture_output=True)
    data: dict[str, Any] = json.loads(out.read_text())
    data["result"] = result
    return data


def pipe_peer(n: int, work_us: float) -> float:
    """Median µs of an ``os.write`` of an iteration's line to a pipe whose reader sleeps in
    ``poll`` between lines (the peer: a pipe and a reader, nothing of edgeprof)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the reader
        os.close(w)
        p = select.poll()
        p.register(r, select.POLLIN)
        while True:
            p.poll()
            if not os.read(r, 65536):
                os._exit(0)
    os.close(r)
    times = []
    work = work_us / 1e6
    for _ in range(n):
        t = time.thread_time()
        while time.thread_time() - t < work:
            pass
        t1 = time.monotonic()
        os.write(w, f"iter {t1:.9f} {t1:.9f}\n".encode())
        times.append(time.monotonic() - t1)
    os.close(w)
    os.waitpid(pid, 0)
    return statistics.median(times) * 1e6


def per_iteration(tmp: Path, sizes: list[tuple[float, int]]) -> list[dict[str, Any]]:
    rows = []
    for work_us, n in sizes:
        bare = loop(tmp, n, work_us)
        under = loop(tmp, n, work_us, "--interval", "0.1")
        assert under["active"] and not bare["active"]
        rows.append(
            {
                "work_us": work_us,
                "iterations": n,
                "bare_us": bare["wall"] / n * 1e6,
                "edgeprof_us": under["wall"] / n * 1e6,
                "send_median_us": statistics.median(under["sends"]) * 1e6,
                "pipe_peer_us": pipe_peer(n, work_us),
            }
        )
    return rows


def stalls(tmp: Path, n: int, rounds: int, work_us: float) -> list[dict[str, Any]]:
    rows = []
    for _ in range(rounds):
        d = loop(tmp, n, work_us, "--cpus", "0.5", "--interval", "0.1")
        sends = d["sends"]
        stalled = [s for s in sends if s > 0.001]
        rows.append(
            {
                "work_us": work_us,
                "iterations": n,
                "stalled_sends": len(stalled),
                "stall_in_sends_s": sum(stalled),
                "throttled_s": d["result"]["cpu"]["throttled_s"],
                # What the group got of a CPU, and how long other tasks held it off its CPU
                # beyond the quota's stalls: held off, it may never spend its quota.
                "cpu_share": d["result"]["cpu"]["total_s"] / d["result"]["wall_s"],
                "held_by_others_s": held_by_others(
                    d["result"]["cpu"]["held_s"], d["result"]["cpu"]["throttled_s"]
                ),
                "send_share": sum(s for s in sends if s <= 0.001) / d["wall"],
            }
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer iterations (CI)")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("benchmarks/events.py: needs root (edgeprof run creates cgroups)")
    q = args.quick
    sizes: list[tuple[float, int]] = [(0, 500 if q else 5000), (100, 300 if q else 3000)]
    sizes.append((8000, 20 if q else 200))
    with tempfile.TemporaryDirectory(prefix="edgeprof-events-") as d:
        tmp = Path(d)
        cost = per_iteration(tmp, sizes)
        stall = stalls(tmp, 20 if q else 200, 1 if q else 4, 8000)
        stall += stalls(tmp, 100 if q else 1000, 1 if q else 4, 1000)
    print("1. Per-iteration cost (µs per iteration of the loop; the write: median µs)")
    print(
        f"{'work':>8}  {'iters':>6}  {'bare':>9}  {'edgeprof':>9}  {'+/it':>7}  "
        f"{'write':>7}  {'pipe peer':>9}"
    )
    for r in cost:
        print(
            f"{r['work_us']:>6g}µs  {r['iterations']:>6}  {r['bare_us']:>9.1f}  "
            f"{r['edgeprof_us']:>9.1f}  {r['edgeprof_us'] - r['bare_us']:>+7.1f}  "
            f"{r['send_median_us']:>7.1f}  {r['pipe_peer_us']:>9.1f}"
        )
    print("\n2. Stalls outside the iterations: under --cpus 0.5 (5 ms period)")
    print(
        f"{'work':>8}  {'iters':>6}  {'stalled writes':>14}  {'their stall':>11}  "
        f"{'throttled':>9}  {'time in writes':>14}"
    )
    for r in stall:
        print(
            f"{r['work_us']:>6g}µs  {r['iterations']:>6}  {r['stalled_sends']:>14}  "
            f"{r['stall_in_sends_s'] * 1e3:>9.1f}ms"
            f"  {r['throttled_s']:>8.2f}s  {r['send_share'] * 100:>13.2f}%"
        )
    if args.json is not None:
        args.json.write_text(json.dumps({"cost": cost, "stalls": stall}, indent=2) + "\n")


if __name__ == "__main__":
    main()
