"""The process backend against the cgroup backend: the same workloads, both ways, one run.

Each workload runs ``--rounds`` times under each backend, alternating, and the table gives the
median of each figure and the ratio process / cgroup:

* ``tree``: a main process and an orphaned grandchild spinning to known CPU targets
  (tests/workloads/tree_cpu.py): CPU time, which both backends should count exactly, and
  the workload's own count of it;
* ``hold``: one process touching ``--hold-mib`` MiB (tests/workloads/hold_memory.py): the
  peak, the process's own high-water mark (VmHWM) beside it;
* ``read``: the same after reading a file of ``--file-mib`` MiB evicted from the page cache
  first: the cgroup's peak counts the page cache the read filled, the resident set does not;
* the cost of one ``sample()`` of a live two-process tree, in µs, for each backend.

    python benchmarks/process_backend.py [--rounds N] [--hold-mib H] [--file-mib F] [--json FILE]
    python benchmarks/process_backend.py --quick     # one round, small sizes: what CI runs

The data file is written to a temporary directory under ``--dir`` (default: the system's
temporary directory, or ``/var/tmp`` where that is in memory: the read must come from disk),
removed at the end.

Needs root (the cgroup backend's groups).  Figures are measurements of this machine, never
asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WORKLOADS = REPO / "tests" / "workloads"
MIB = 1 << 20
BACKENDS = ("cgroup", "process")

sys.path.insert(0, str(REPO))
import edgeprof  # noqa: E402
from benchmarks.scratch import disk_dir  # noqa: E402
from edgeprof.backends import get_backend  # noqa: E402
from edgeprof.model import RunSpec  # noqa: E402

READ = """
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # evicted: the read fills the cache anew
while os.read(fd, 1 << 20):
    pass
os.close(fd)
block = bytearray(int(sys.argv[2]) << 20)
with open("/proc/self/status") as f:
    hwm = next(int(ln.split()[1]) * 1024 for ln in f if ln.startswith("VmHWM:"))
with open(sys.argv[3], "w") as f:
    f.write(str(hwm))
"""


def tree(backend: str, tmp: Path) -> dict[str, float]:
    out = Path(tempfile.mkdtemp(dir=tmp))
    r = edgeprof.profile(
        [sys.executable, str(WORKLOADS / "tree_cpu.py"), str(out), "0.4", "0.3"], backend=backend
    )
    own = float((out / "main").read_text()) + float((out / "grandchild").read_text())
    assert r.cpu.total_s is not None, r
    return {"cpu_s": r.cpu.total_s, "workload_cpu_s": own}


def hold(backend: str, tmp: Path, mib: int) -> dict[str, float]:
    hwm = tmp / f"hwm-{backend}"
    r = edgeprof.profile(
        [sys.executable, str(WORKLOADS / "hold_memory.py"), str(mib), str(hwm)], backend=backend
    )
    assert r.memory.peak_bytes is not None, r
    return {"peak_mib": r.memory.peak_bytes / MIB, "vmhwm_mib": int(hwm.read_text()) / MIB}


def read(backend: str, tmp: Path, data: Path, mib: int) -> dict[str, float]:
    hwm = tmp / f"rhwm-{backend}"
    r = edgeprof.profile(
        [sys.executable, "-c", READ, str(data), str(mib), str(hwm)], backend=backend
    )
    assert r.memory.peak_bytes is not None, r
    return {"peak_mib": r.memory.peak_bytes / MIB, "vmhwm_mib": int(hwm.read_text()) / MIB}


def sample_cost(backend: str, n: int) -> float:
    """µs per ``sample()`` of a live tree of two processes (a shell and its sleep)."""
    be = get_backend(backend)
    with be.launch(RunSpec(command=("sh", "-c", "sleep 30 & wait"))) as run:
        time.sleep(0.2)  # the shell has forked its child
        t = time.perf_counter()
        for _ in range(n):
            run.sample()
        cost = (time.perf_counter() - t) / n * 1e6
        run.kill()
    return cost


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--hold-mib", type=int, default=256)
    ap.add_argument("--file-mib", type=int, default=128)
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--quick", action="store_true", help="one round, small sizes (CI)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--dir", type=Path, help="where the data file goes (on disk)")
    a = ap.parse_args()
    if a.quick:
        a.rounds, a.hold_mib, a.file_mib, a.samples = 1, 32, 16, 100
    if os.geteuid() != 0:
        sys.exit("needs root: the cgroup backend creates groups")
    with tempfile.TemporaryDirectory(prefix="edgeprof-backend-", dir=a.dir or disk_dir()) as t:
        tmp = Path(t)
        data = tmp / "data"
        with open(data, "wb") as f:
            f.write(os.urandom(a.file_mib * MIB))
            os.fsync(f.fileno())
        runs: dict[str, dict[str, list[dict[str, float]]]] = {
            w: {b: [] for b in BACKENDS} for w in ("tree", "hold", "read")
        }
        for _ in range(a.rounds):
            for b in BACKENDS:  # alternating: a drift of the machine hits both alike
                runs["tree"][b].append(tree(b, tmp))
                runs["hold"][b].append(hold(b, tmp, a.hold_mib))
                runs["read"][b].append(read(b, tmp, data, a.hold_mib))
        costs = {b: sample_cost(b, a.samples) for b in BACKENDS}
    doc: dict[str, Any] = {
        "rounds": a.rounds,
        "hold_mib": a.hold_mib,
        "file_mib": a.file_mib,
        "kernel": os.uname().release,
        "runs": runs,
        "sample_us": costs,
    }
    rows = [
        ("tree: CPU time (s)", "tree", "cpu_s", "workload_cpu_s"),
        (f"hold {a.hold_mib} MiB: peak (MiB)", "hold", "peak_mib", "vmhwm_mib"),
        (f"read {a.file_mib} MiB + hold: peak (MiB)", "read", "peak_mib", "vmhwm_mib"),
    ]
    print(f"process backend against cgroup backend, median of {a.rounds} round(s), "
          f"Linux {os.uname().release}")  # fmt: skip
    print(f"{'figure':<36} {'cgroup':>10} {'process':>10} {'ratio':>7} {'workload':>10}")
    for label, w, key, own in rows:
        c = statistics.median(x[key] for x in runs[w]["cgroup"])
        p = statistics.median(x[key] for x in runs[w]["process"])
        o = statistics.median(x[own] for x in runs[w]["process"])
        doc.setdefault("medians", {})[w] = {"cgroup": c, "process": p, "workload": o}
        print(f"{label:<36} {c:>10.3f} {p:>10.3f} {p / c:>7.3f} {o:>10.3f}")
    c, p = costs["cgroup"], costs["process"]
    print(f"{'one sample() of a 2-process tree (µs)':<36} {c:>10.1f} {p:>10.1f} {p / c:>7.1f}")
    if a.json is not None:
        a.json.write_text(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
