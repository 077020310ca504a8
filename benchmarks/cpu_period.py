"""What the CFS period does to a fractional CPU limit: the figures behind edgeprof's default.

One core, a CPU-bound loop of equal iterations (``tests/workloads/iterations.py``, 5 ms
each at full speed unless ``--iteration-ms`` says otherwise), reported with
``edgeprof.iteration()``.  For each share (0.25, 0.5, 0.75) and period (100, 20, 10, 5, 2,
1 ms, and edgeprof's default), it prints over ``--rounds`` runs (medians):

- ``p50×share/base``: the median iteration against a core ``share`` times as fast
  (the unlimited median divided by the share); 1.00 is a faithful slower core;
- ``p99/p50``: the tail a slower core would not have (an unlimited run's is the floor);
- ``cpu/it``: CPU time per iteration against the unlimited run's (what throttling costs in
  cache and TLB refills, timer interrupts);
- ``cs/it``: involuntary context switches per iteration (each stall is one);
- ``throttled``: periods throttled / periods elapsed;
- ``held``: the share of the run's wall time other tasks held it off its core (edgeprof's
  ``cpu.held_s`` less the quota's ``throttled_s``; ``n/a`` without ``cpu.pressure``).  The
  unlimited run is every ratio's base: where other work held it (a tester saw
  ``p50×share/base`` 0.52 at half a core, "twice too fast", from a contended base), the
  script says so under the table rather than let it read as the quota's effect.

A period whose quota would be under 1 ms is one the kernel refuses (``refused``).  The
kernel's scheduler tick is printed with the machine: a quota is enforced once per tick, so
an iteration of a few ticks carries up to a tick of jitter whatever the period
(:mod:`edgeprof.measure.tick`); compare ``--iteration-ms 20`` with the default.

    python benchmarks/cpu_period.py [--quick] [--rounds N] [--iteration-ms MS] [--json FILE]
    python benchmarks/cpu_period.py --backend docker --image IMAGE_WITH_PYTHON3
    python benchmarks/cpu_period.py --vm          # the same, inside the cgroup v2 test guest

Needs root (real cgroups), or a Docker daemon (``DOCKER_HOST``) for ``--backend docker``.
Figures are measurements of this machine, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import edgeprof
from edgeprof.backends import get_backend
from edgeprof.cpu_units import MIN_QUOTA_US, format_period
from edgeprof.measure.limits import cpu_period_us
from edgeprof.measure.tick import scheduler_hz
from edgeprof.model import Limits, RunResult

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WORKLOAD = REPO / "tests" / "workloads" / "iterations.py"
CLIENT = REPO / "edgeprof" / "workload" / "instrument.py"
SHARES = (0.25, 0.5, 0.75)
PERIODS_MS = (100, 20, 10, 5, 2, 1)
TARGET_MS = 5.0


class Rig:
    """Runs the workload on one core under a backend; the container gets the workload and
    the events client mounted (the client file is all ``import edgeprof`` needs there)."""

    def __init__(self, backend: str, image: str | None, core: int, tmp: Path) -> None:
        self.core = core
        self.tmp = tmp
        self.docker = backend == "docker"
        self.be: Any = get_backend(backend)
        if self.docker:
            from edgeprof.backends.docker import DockerBackend
            from edgeprof.backends.docker.options import parse_docker_args

            opts = parse_docker_args(
                f"-v {WORKLOAD}:/opt/ep/iterations.py:ro -v {CLIENT}:/opt/ep/edgeprof.py:ro "
                f"-v {self.tmp}:/out -e PYTHONPATH=/opt/ep --network none"
            )
            self.be = DockerBackend(image, options=opts)
            self.be.check()

    def run(self, limits: Limits, loops: int, count: int) -> tuple[RunResult, dict[str, Any]]:
        name = "rusage.json"
        host_file = self.tmp / name
        host_file.unlink(missing_ok=True)
        if self.docker:
            cmd = ["python3", "/opt/ep/iterations.py", str(loops), str(count), f"/out/{name}"]
            os.chmod(self.tmp, 0o777)
        else:
            cmd = [sys.executable, str(WORKLOAD), str(loops), str(count), str(host_file)]
        r = edgeprof.profile(cmd, limits, backend=self.be, interval=0.1)
        if r.exit_code != 0 or r.latency is None:
            raise SystemExit(f"the workload failed under {limits.describe()}: {r.termination}")
        return r, json.loads(host_file.read_text())


def calibrate(rig: Rig, target_s: float) -> int:
    """Loops per iteration for ``target_s`` at full speed on the core."""
    loops = 50_000
    for _ in range(3):
        r, _ = rig.run(Limits(cpus=1, cpuset=[rig.core]), loops, 20)
        assert r.latency is not None
        loops = max(1000, round(loops * target_s / r.latency.p50_s))
    return loops


CONTENDED = 0.10
"""The share of a run's wall time held by other tasks that edgeprof itself warns of."""


def held_share(r: RunResult) -> float | None:
    """The share of ``r``'s wall time other tasks held it off its CPUs: ``cpu.held_s`` (PSI
    ``full``) less the quota's own stalls (``throttled_s``); None without ``cpu.pressure``."""
    if r.cpu.held_s is None or not r.wall_s:
        return None
    return max(0.0, r.cpu.held_s - (r.cpu.throttled_s or 0.0)) / r.wall_s


def measure(rig: Rig, limits: Limits, loops: int, count: int, rounds: int) -> dict[str, Any]:
    rows = []
    for _ in range(rounds):
        r, ru = rig.run(limits, loops, count)
        lat = r.latency
        assert lat is not None
        rows.append(
            {
                "p50_s": lat.p50_s,
                "p99_s": lat.p99_s,
                "cpu_per_it_s": ru["cpu_s"] / (count + 5),
                "ivcs_per_it": ru["nivcsw"] / (count + 5),
                "nr_throttled": r.cpu.nr_throttled,
                "nr_periods": r.cpu.nr_periods,
                "period_s": r.cpu.period_s,
                "held": held_share(r),
            }
        )
    med: dict[str, Any] = {
        k: statistics.median(row[k] or 0 for row in rows) for k in rows[0] if k != "held"
    }
    held = [row["held"] for row in rows if row["held"] is not None]
    med["held"] = max(held) if held else None  # the worst round: one contended round skews
    med["runs"] = rows
    return med


def run_all(a: argparse.Namespace) -> dict[str, Any]:
    core = sorted(os.sched_getaffinity(0))[-1]
    with tempfile.TemporaryDirectory(prefix="edgeprof-period-") as tmp:
        return _run_all(a, Rig(a.backend, a.image, core, Path(tmp)), core)


def _run_all(a: argparse.Namespace, rig: Rig, core: int) -> dict[str, Any]:
    loops = calibrate(rig, a.iteration_ms / 1000)
    count = 60 if a.quick else a.iterations
    rounds = 1 if a.quick else a.rounds
    base = measure(rig, Limits(cpus=1, cpuset=[core]), loops, count, rounds)
    periods = (100, 2) if a.quick else a.periods
    cells: list[dict[str, Any]] = []
    for share in (0.5,) if a.quick else a.shares:
        default_us = cpu_period_us(Limits(cpus=share, cpuset=[core]), None)
        assert default_us is not None
        wanted = sorted({round(p * 1000) for p in periods} | {default_us}, reverse=True)
        for period in wanted:
            cell: dict[str, Any] = {
                "share": share,
                "period_us": period,
                "default": period == default_us,
            }
            if share * period < MIN_QUOTA_US:
                cell["refused"] = True
            else:
                lim = Limits(cpus=share, cpuset=[core], cpu_period_us=period)
                m = measure(rig, lim, loops, count, rounds)
                cell.update(
                    m,
                    p50_ratio=m["p50_s"] * share / base["p50_s"],
                    tail=m["p99_s"] / m["p50_s"],
                    cpu_ratio=m["cpu_per_it_s"] / base["cpu_per_it_s"],
                )
                # Progress only: the table on stdout holds the row (a terminal showed it twice).
                done = f"measured --cpus {share:g} --cpu-period {format_period(period)}"
                print(done, file=sys.stderr, flush=True)
            cells.append(cell)
    return {
        "machine": {
            "kernel": platform.release(),
            "cpus": os.cpu_count(),
            "backend": rig.be.mechanism,
            "hz": scheduler_hz(),
            "core": core,
        },
        "loops": loops,
        "iteration_ms": a.iteration_ms,
        "iterations": count,
        "rounds": rounds,
        "base": {**base, "tail": base["p99_s"] / base["p50_s"]},
        "cells": cells,
    }


def _pct(share: float | None) -> str:
    return "n/a" if share is None else f"{100 * share:.0f} %"


def render_cell(c: dict[str, Any]) -> str:
    label = format_period(c["period_us"]) + (" (default)" if c["default"] else "")
    if c.get("refused"):
        return f"| {c['share']:g} | {label} | refused: quota under 1 ms | | | | | |"
    return (
        f"| {c['share']:g} | {label} | {c['p50_ratio']:.2f} | {c['tail']:.2f} | "
        f"{c['cpu_ratio']:.2f} | {c['ivcs_per_it']:.2f} | "
        f"{c['nr_throttled']:.0f}/{c['nr_periods']:.0f} | {_pct(c.get('held'))} |"
    )


def contention_note(base: dict[str, Any]) -> str | None:
    """A line under the table where other tasks held the unlimited run, every ratio's base,
    off its core for a tenth of its time or more (edgeprof's own threshold)."""
    held = base.get("held")
    if held is None or held < CONTENDED:
        return None
    return (
        f"The unlimited run was held off its core by other tasks {_pct(held)} of its time "
        "(cpu.held_s): its median is slow, so p50×share/base is low for every row; that is "
        "the host's load, not the quota's. Run again when the core is idle."
    )


def render(res: dict[str, Any]) -> str:
    m, b = res["machine"], res["base"]
    lines = [
        f"{m['backend']}, Linux {m['kernel']} ({m.get('hz') or '?'} Hz tick), {m['cpus']} CPUs, "
        f"core {m['core']}; {res['iterations']} iterations of {res.get('iteration_ms', 5):g} ms "
        f"× {res['rounds']} round(s), medians",
        f"unlimited: p50 {b['p50_s'] * 1e3:.2f} ms, p99/p50 {b['tail']:.2f}, "
        f"{b['ivcs_per_it']:.2f} cs/it, held by other tasks {_pct(b.get('held'))}",
        "",
        "| share | period | p50×share/base | p99/p50 | cpu/it | cs/it | throttled | held |",
        "|---|---|---|---|---|---|---|---|",
        *(render_cell(c) for c in res["cells"]),
    ]
    note = contention_note(b)
    return "\n".join([*lines, *([] if note is None else ["", note])])


def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(x) for x in text.split(","))


def in_guest(argv: list[str]) -> int:
    """Run this script inside the cgroup v2 test guest (``tests/vm``) and print its table."""
    sys.path.insert(0, str(REPO))
    from tests.vm.harness import GUEST_OUT_DIR, REPO_ROOT, project_python, run_in_guest

    args = [a for a in argv if a != "--vm"]
    res = run_in_guest(
        [str(project_python()), str(HERE / "cpu_period.py"), *args,
         "--json", f"{GUEST_OUT_DIR}/period.json"],
        cwd=REPO_ROOT,
    )  # fmt: skip
    sys.stderr.write(res.output)
    if res.exit_code != 0:
        return res.exit_code
    print(render(json.loads((res.out_dir / "period.json").read_text())))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default="auto", help="auto | cgroup | docker")
    ap.add_argument("--image", help="--backend docker: an image with python3")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--quick", action="store_true", help="one share, two periods, one round")
    ap.add_argument("--shares", type=_floats, default=SHARES, help="e.g. 0.5,0.25")
    ap.add_argument("--periods", type=_floats, default=PERIODS_MS, help="in ms, e.g. 10,5,2")
    ap.add_argument(
        "--iteration-ms", type=float, default=TARGET_MS, help="iteration length at full speed"
    )
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--vm", action="store_true", help="run inside the cgroup v2 test guest")
    a = ap.parse_args()
    if a.vm:
        return in_guest(sys.argv[1:])
    if a.backend == "docker" and not a.image:
        ap.error("--backend docker needs --image")
    res = run_all(a)
    print(render(res))
    if a.json:
        a.json.write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
