"""Run every test tier and say how many tests ran in each (``make test`` calls this), or
only the tiers named: ``python tests/run_tiers.py static unit``.

Tiers: static (ruff; mypy --strict over the package, tests and benchmarks; the import
contracts; the documentation site, built strictly), unit (fake
cgroupfs trees, scripted backend), host (the real kernel's cgroups here: v1 hybrid on our
machines), vm (cgroup v2 in throwaway qemu guests, Linux 6.12 and 6.1; each guest's counts
are read back from its JUnit file), docker (a private, real dockerd started by the tier's
fixture), slurm (a private single-node Slurm cluster, slurmctld + slurmd, started by the tier's
fixture), ray (a local multi-node Ray cluster, ray.cluster_utils.Cluster, for the Ray
executor), gpu (CUDA workloads measured over NVML, compared with nvidia-smi).  In CI (CI=true)
a skipped test anywhere fails the run: no tier may skip there.

The gpu tier is the one tier that may not run: only where NVML lists a GPU (:func:`gpu_absent`
asks the venv's interpreter).  Elsewhere it says why in one line and its row reads "did not
run": not passed, not skipped, not failed, and the run does not fail for it, in CI neither.
"""

from __future__ import annotations

import compileall
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / ".test-results"
PY = sys.executable
IN_CI = os.environ.get("CI", "").lower() == "true"

TIERS = [
    ("unit", ["tests/unit"]),
    ("host", ["tests/host", "tests/tooling", "tests/examples"]),
    ("gpu", ["tests/gpu"]),
    ("vm", ["tests/vm"]),
    ("docker", ["tests/docker"]),
    ("slurm", ["tests/slurm"]),
    ("ray", ["tests/ray_tier"]),
]


NAMES = ("static", *(name for name, _ in TIERS))
"""Every tier, in the order they run."""


def chosen(words: Sequence[str]) -> list[str]:
    """The tiers to run, in :data:`NAMES`' order: those ``words`` name, every one when they
    name none.  Raises :class:`ValueError` naming a word that is no tier."""
    unknown = [w for w in words if w not in NAMES]
    if unknown:
        raise ValueError(f"no tier {unknown[0]!r}: the tiers are {', '.join(NAMES)}")
    return [n for n in NAMES if not words or n in words]


def unit_workers(cores: int | None = None) -> list[str]:
    """pytest-xdist's arguments for the unit tier: a worker per core this process may run on
    (at most 8: past that, starting workers costs more than they save).  Its tests are
    fakes and pure logic: at 2150 they took 89.5 s on one of our 2 cores while the other
    idled, 49 s on both (three runs; 67 s with a CPU-bound spinner beside them, measured);
    at 2960, 271 s with two workers while other jobs loaded the machine.  The
    kernel tiers stay serial: their tests measure CPU shares and lease cores."""
    n = min(8, len(os.sched_getaffinity(0)) if cores is None else cores)
    return ["-n", str(n)] if n > 1 else []


COMPILED = ("edgeprof", "tests", "examples", "benchmarks")
"""The checkout's Python, compiled before any tier runs (:func:`compile_checkout`)."""


def compile_checkout(root: Path = REPO) -> bool:
    """Write the bytecode of the checkout's own modules once, up front.

    The tiers run with ``PYTHONDONTWRITEBYTECODE`` (their workloads are scripts in temporary
    directories, which get no ``__pycache__``), and an editable install compiles nothing:
    without this, every ``python -m edgeprof`` a test starts compiles all of edgeprof from
    source (1.1-1.2 s of CPU against 0.3 s with bytecode for ``run -- true`` on this host,
    18.5-21.2 s against 7.2-10.3 s in a TCG guest, measured) until a host-tier test that
    starts edgeprof without the variable happens to write it, five minutes into that tier.
    Bytecode is checked against its source's mtime, so an edit is never masked.
    Returns whether every file compiled (a syntax error is printed and fails the run)."""
    return all(
        compileall.compile_dir(root / name, quiet=1, workers=1) for name in COMPILED
    )


MAY_NOT_RUN = {"gpu"}
"""Tiers that need hardware a host may lack: they do not run there, and say so."""

GPU_PROBE = """
import pynvml
pynvml.nvmlInit()
try:
    print(pynvml.nvmlDeviceGetCount())
finally:
    pynvml.nvmlShutdown()
"""


KERNEL_GPUS = Path("/proc/driver/nvidia/gpus")
"""One directory per GPU the NVIDIA kernel driver bound (its PCI address)."""


def gpu_absent(python: str = PY, timeout: float = 120, kernel: Path = KERNEL_GPUS) -> str | None:
    """``None`` where this host has a GPU for the tier, else why not, in one line.

    NVML is asked in a child of the venv's interpreter (the one the tier's tests and
    workloads run), so that a crash in the driver's library, or its seconds of start-up on a
    many-GPU host (no persistence daemon: every GPU is woken), stay out of this process.
    Where NVML cannot be asked but the kernel driver lists GPUs (no bindings in the venv, a
    broken library), the GPU is there: the tier runs, and its conftest fails in CI (skips
    elsewhere) saying what is missing, rather than the run passing without it."""
    try:
        done = subprocess.run([python, "-c", GPU_PROBE], capture_output=True, text=True,
                              errors="replace", timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        why = str(exc)
    else:
        lines = [ln.strip() for ln in done.stderr.splitlines() if ln.strip()]
        count = done.stdout.strip()
        if done.returncode != 0:
            why = lines[-1] if lines else f"exit {done.returncode}"
        elif not count.isdigit():
            why = f"device count {count!r}"
        else:
            return None if int(count) > 0 else "no NVIDIA GPU here (NVML lists none)"
    try:
        bound = any(kernel.iterdir())
    except OSError:
        bound = False
    return None if bound else f"no NVIDIA GPU here (NVML: {why})"


class Row(NamedTuple):
    name: str
    counts: dict[str, int] | None
    """``None``: the tier did not run (``why``)."""
    secs: float
    rc: int
    why: str | None = None


def summary(rows: list[Row], in_ci: bool = IN_CI) -> tuple[list[str], bool]:
    """The summary's lines, and whether the run passed: every tier that ran ran tests and
    none failed (nor, in CI, skipped); a tier of :data:`MAY_NOT_RUN` that did not run
    counts for nothing, any other that did not run fails the run."""
    lines = ["", "=== summary: tests run per tier"]
    ok = True
    total = {"passed": 0, "failed": 0, "skipped": 0}
    not_run = []
    for name, c, secs, rc, why in rows:
        if c is None:
            lines.append(f"  {name:28s} did not run: {why}")
            not_run.append(name)
            ok = ok and name in MAY_NOT_RUN
            continue
        failed = c["failures"] + c["errors"]
        passed = c["tests"] - failed - c["skipped"]
        lines.append(f"  {name:28s} {passed:4d} passed {failed:3d} failed {c['skipped']:3d} "
                     f"skipped  {secs:7.1f}s")
        if rc not in (0,) or failed or c["tests"] == 0 or (in_ci and c["skipped"]):
            ok = False
        if not name.startswith("vm guest"):
            total["passed"] += passed
            total["failed"] += failed
            total["skipped"] += c["skipped"]
    if in_ci and total["skipped"]:
        lines.append("CI=true: a tier skipped tests, which CI does not allow")
    last = f"{total['passed']} passed, {total['failed']} failed, {total['skipped']} skipped"
    if not_run:
        last += f"; did not run: {', '.join(not_run)}"
    lines.append(last)
    return lines, ok


def counts(junit: Path) -> dict[str, int]:
    c = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    if not junit.exists():
        return c
    root = ET.parse(junit).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    for s in suites:
        for k in c:
            c[k] += int(s.get(k, 0))
    return c


def _static(env: dict[str, str], compiled: bool, t: float) -> Row:
    """The static tier's row: its commands, one test each (``t``: when the tiers started)."""
    static_rc = 0 if compiled else 1
    lint = [PY, "-m", "ruff", "check", "edgeprof", "tests", "examples", "benchmarks", "native",
            "docs"]
    # No arguments: pyproject's [tool.mypy] files, the package and the tests, their harnesses,
    # benchmarks and the native build script, all --strict.
    # The layering and no import cycles: pyproject's [tool.importlinter] contracts.
    contracts = [str(Path(PY).parent / "lint-imports"), "--no-cache"]
    # The documentation site, strictly: a broken link, anchor or snippet, or a page left out
    # of the navigation, fails it (mkdocs.yml's validation); its CLI page runs every --help.
    # Not --quiet: mkdocs 1.6 then counts no warning, and --strict passes a broken link.
    site = [PY, "-m", "mkdocs", "build", "--strict", "-d",
            str(RESULTS / "site")]
    static = [lint, [PY, "-m", "mypy"], contracts, site]
    for cmd in static:
        print("$", " ".join(Path(c).name if i == 0 else c for i, c in enumerate(cmd)), flush=True)
        static_rc |= subprocess.call(cmd, cwd=REPO, env=env)
    return Row("static", {"tests": len(static), "failures": int(static_rc != 0),
                          "errors": 0, "skipped": 0}, time.monotonic() - t, static_rc)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        run = chosen(sys.argv[1:] if argv is None else argv)
    except ValueError as exc:
        print(f"run_tiers: {exc}", file=sys.stderr)
        return 2
    RESULTS.mkdir(exist_ok=True)
    for old in RESULTS.glob("*.xml"):
        old.unlink()
    env = {**os.environ, "EDGEPROF_RESULTS_DIR": str(RESULTS), "PYTHONDONTWRITEBYTECODE": "1",
           "NO_MKDOCS_2_WARNING": "1"}  # Material's banner about its successor, every build
    rows: list[Row] = []

    t = time.monotonic()
    compiled = compile_checkout()  # for every tier: each runs without writing bytecode
    if "static" in run:
        rows.append(_static(env, compiled, t))

    for name, paths in TIERS:
        if name not in run:
            continue
        why = gpu_absent() if name == "gpu" else None
        if why is not None:
            print(f"\n=== tier {name}: did not run: {why}", flush=True)
            rows.append(Row(name, None, 0.0, 0, why))
            continue
        junit = RESULTS / f"{name}.xml"
        cmd = [PY, "-m", "pytest", *paths, "-q", "-rfEs", "-p", "no:cacheprovider",
               f"--junitxml={junit}", *(unit_workers() if name == "unit" else []),
               # The gpu tier records the figures it compared (record_property), which
               # pytest writes only in the xunit1 flavour of JUnit.
               *(["-o", "junit_family=xunit1"] if name == "gpu" else [])]
        print(f"\n=== tier {name}: {' '.join(cmd[2:])}", flush=True)
        t = time.monotonic()
        rc = subprocess.call(cmd, cwd=REPO, env=env)
        rows.append(Row(name, counts(junit), time.monotonic() - t, rc))

    # One row per cgroup v2 guest (vm-guest-6.12-part-1.xml, vm-guest-6.1.xml,
    # vm-guest-6.12-systemd.xml, ...): their tests ran
    # inside the vm tier's, so their time is in its row.
    for guest in sorted(RESULTS.glob("vm-guest-*.xml"), key=lambda p: p.name, reverse=True):
        kernel = guest.stem.removeprefix("vm-guest-").replace("-", " ")
        rows.append(Row(f"vm guest Linux {kernel}", counts(guest), 0.0, 0))

    lines, ok = summary(rows)
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
