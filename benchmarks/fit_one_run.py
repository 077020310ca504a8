"""``edgeprof fit``: how stable its answer is, and how the one-run estimate compares.

A script reads a file it evicts first (so its page cache is charged to the run) and then
holds ``--hold-mib`` of arrays: its peak is the file plus the arrays, its need the arrays
plus the interpreter.  For each of ``--rounds`` rounds it runs ``edgeprof fit`` (bisection)
and, where the kernel has ``memory.reclaim`` (cgroup v2, Linux ≥ 5.19), ``edgeprof fit
--one-run``, and prints per round: the answer, the runs made and the wall time; then the
bisection's spread across rounds against its resolution, and the one-run estimate against
the bisection's answer with the runs and time it saved.

    python benchmarks/fit_one_run.py [--rounds N] [--file-mib M] [--hold-mib H] [--json FILE]
    python benchmarks/fit_one_run.py --vm     # inside the cgroup v2 test guest (tests/vm)
    python benchmarks/fit_one_run.py --quick  # one round, small sizes: what CI runs

Needs root (real cgroups).  Figures are measurements of this machine, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MIB = 1 << 20

sys.path.insert(0, str(REPO))
from benchmarks.scratch import disk_dir  # noqa: E402
from tests.host.memory_workload import READ_AND_HOLD  # noqa: E402  (the tests' own workload)

HOLD_S = "0.3"


def fit(args: list[str], script: Path, data: Path, hold: int) -> dict[str, Any]:
    """One ``edgeprof fit --json``: its document, the runs it made and its wall time."""
    t = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "edgeprof", "fit", "--json", *args, "--",
         sys.executable, str(script), str(data), str(hold), HOLD_S],
        cwd=REPO, capture_output=True, text=True, check=False,
    )  # fmt: skip
    wall = time.monotonic() - t
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:], "wall_s": wall}
    d = json.loads(proc.stdout)
    runs = (
        1
        if d["method"] == "one-run"
        else len(d["reference"]["wall_s"]) + 1 + sum(len(p["wall_s"]) for p in d["probes"])
    )  # the reference's discarded warm-up is the + 1
    return {
        "answer_bytes": d["min_memory_bytes"],
        "resolution_bytes": d["resolution_bytes"],
        "peak_bytes": d["reference"]["peak_bytes"],
        "runs": runs,
        "wall_s": wall,
    }


def run_all(a: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="edgeprof-fit-bench-", dir=a.dir or disk_dir()) as tmp:
        script = Path(tmp) / "read_and_hold.py"
        script.write_text(READ_AND_HOLD)
        data = a.data or Path(tmp) / "model.bin"
        if a.data is None:
            with open(data, "wb") as f:
                for _ in range(a.file_mib):
                    f.write(os.urandom(MIB))
        rounds = []
        for _ in range(a.rounds):
            rounds.append(
                {
                    "bisection": fit([], script, data, a.hold_mib),
                    "one_run": fit(["--one-run"], script, data, a.hold_mib),
                }
            )
    return {
        "machine": f"{platform.node()} {platform.release()} {os.cpu_count()} CPUs",
        "file_mib": a.file_mib,
        "hold_mib": a.hold_mib,
        "rounds": rounds,
    }


def _mib(n: int | None) -> str:
    return "-" if n is None else f"{n / MIB:.1f}"


def render(res: dict[str, Any]) -> str:
    lines = [
        f"{res['machine']}: read {res['file_mib']} MiB (evicted first), hold {res['hold_mib']} MiB",
        f"{'round':<6} {'method':<10} {'answer MiB':>10} {'runs':>5} {'wall s':>7}",
    ]
    for i, r in enumerate(res["rounds"], 1):
        for method in ("bisection", "one_run"):
            m = r[method]
            if "error" in m:
                lines.append(f"{i:<6} {method:<10} {' '.join(m['error'])}")
                continue
            lines.append(
                f"{i:<6} {method:<10} {_mib(m['answer_bytes']):>10} {m['runs']:>5} "
                f"{m['wall_s']:>7.1f}"
            )
    bis = [r["bisection"] for r in res["rounds"] if "error" not in r["bisection"]]
    one = [r["one_run"] for r in res["rounds"] if "error" not in r["one_run"]]
    if len(bis) > 1:
        answers = [b["answer_bytes"] for b in bis]
        lines.append(
            f"bisection across rounds: {_mib(max(answers) - min(answers))} MiB apart, "
            f"resolution {_mib(bis[0]['resolution_bytes'])} MiB"
        )
    for b, o in zip(
        (r["bisection"] for r in res["rounds"]),
        (r["one_run"] for r in res["rounds"]),
        strict=True,
    ):
        if "error" in b or "error" in o:
            continue
        lines.append(
            f"one-run - bisection: {(o['answer_bytes'] - b['answer_bytes']) / MIB:+.1f} MiB "
            f"(resolution {_mib(b['resolution_bytes'])}); runs {o['runs']} against "
            f"{b['runs']} ({b['runs'] / o['runs']:.0f}x fewer), wall "
            f"{b['wall_s'] / o['wall_s']:.1f}x shorter; peak {_mib(b['peak_bytes'])} MiB"
        )
    if bis and not one:
        lines.append("one-run: not on this kernel (cgroup v2 with memory.reclaim): try --vm")
    return "\n".join(lines)


def in_guest(argv: list[str], a: argparse.Namespace) -> int:
    """Run this script inside the cgroup v2 guest, on a data file made here (the guest's own
    file system is in memory: reading it would fill no page cache).  The file goes in the
    checkout because that is what the guest mounts; its directory is removed at the end."""
    from tests.vm.harness import GUEST_OUT_DIR, REPO_ROOT, project_python, run_in_guest

    args = [x for x in argv if x != "--vm"]
    with tempfile.TemporaryDirectory(prefix="edgeprof-fit-bench-", dir=REPO) as tmp:
        data = Path(tmp) / "model.bin"
        with open(data, "wb") as f:
            for _ in range(a.file_mib):
                f.write(os.urandom(MIB))
        res = run_in_guest(
            [str(project_python()), str(HERE / "fit_one_run.py"), *args, "--data", str(data),
             "--dir", "/tmp", "--json", f"{GUEST_OUT_DIR}/fit.json"],
            cwd=REPO_ROOT, timeout=1800,
        )  # fmt: skip
    if res.exit_code != 0:
        sys.stderr.write(res.output)
        return res.exit_code
    print(render(json.loads((res.out_dir / "fit.json").read_text())))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--file-mib", type=int, default=128)
    ap.add_argument("--hold-mib", type=int, default=48)
    ap.add_argument("--quick", action="store_true", help="one round, 32 MiB read, 16 held")
    ap.add_argument("--data", type=Path, help="an existing data file to read")
    ap.add_argument(
        "--dir",
        type=Path,
        help="where the script and data file go, in a temporary directory removed at the end "
        "(on disk; default: the system's temporary directory, or /var/tmp where it is memory)",
    )
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--vm", action="store_true", help="run inside the cgroup v2 test guest")
    a = ap.parse_args()
    if a.quick:
        a.rounds, a.file_mib, a.hold_mib = 1, 32, 16
    if a.vm:
        return in_guest(sys.argv[1:], a)
    res = run_all(a)
    print(render(res))
    if a.json:
        a.json.write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
