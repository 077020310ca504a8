"""Run every test tier and say how many tests ran in each (``make test`` calls this).

Tiers: static (ruff; mypy --strict over the package, tests and benchmarks; the import
contracts; the documentation site, built strictly), unit (fake
cgroupfs trees, scripted backend), host (the real kernel's cgroups here: v1 hybrid on our
machines), vm (cgroup v2 in throwaway qemu guests, Linux 6.12 and 6.1; each guest's counts
are read back from its JUnit file), docker (a private, real dockerd started by the tier's
fixture), slurm (a private single-node Slurm cluster, slurmctld + slurmd, started by the tier's
fixture), ray (a local multi-node Ray cluster, ray.cluster_utils.Cluster, for the Ray
executor).  In CI (CI=true) a skipped test anywhere fails the run: no tier may skip there.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / ".test-results"
PY = sys.executable
IN_CI = os.environ.get("CI", "").lower() == "true"

TIERS = [
    ("unit", ["tests/unit"]),
    ("host", ["tests/host", "tests/tooling", "tests/examples"]),
    ("vm", ["tests/vm"]),
    ("docker", ["tests/docker"]),
    ("slurm", ["tests/slurm"]),
    ("ray", ["tests/ray_tier"]),
]


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


def main() -> int:
    RESULTS.mkdir(exist_ok=True)
    for old in RESULTS.glob("*.xml"):
        old.unlink()
    env = {**os.environ, "EDGEPROF_RESULTS_DIR": str(RESULTS), "PYTHONDONTWRITEBYTECODE": "1",
           "NO_MKDOCS_2_WARNING": "1"}  # Material's banner about its successor, every build
    rows: list[tuple[str, dict[str, int], float, int]] = []

    t = time.monotonic()
    static_rc = 0
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
    rows.append(("static", {"tests": len(static), "failures": int(static_rc != 0), "errors": 0,
                            "skipped": 0}, time.monotonic() - t, static_rc))

    for name, paths in TIERS:
        junit = RESULTS / f"{name}.xml"
        cmd = [PY, "-m", "pytest", *paths, "-q", "-rfEs", "-p", "no:cacheprovider",
               f"--junitxml={junit}"]
        print(f"\n=== tier {name}: {' '.join(cmd[2:])}", flush=True)
        t = time.monotonic()
        rc = subprocess.call(cmd, cwd=REPO, env=env)
        rows.append((name, counts(junit), time.monotonic() - t, rc))

    # One row per cgroup v2 guest (vm-guest-6.12.xml, vm-guest-6.1.xml,
    # vm-guest-6.12-systemd.xml): their tests ran
    # inside the vm tier's, so their time is in its row.
    for guest in sorted(RESULTS.glob("vm-guest-*.xml"), key=lambda p: p.name, reverse=True):
        kernel = guest.stem.removeprefix("vm-guest-").replace("-", " ")
        rows.append((f"vm guest Linux {kernel}", counts(guest), 0.0, 0))

    print("\n=== summary: tests run per tier")
    ok = True
    total = {"passed": 0, "failed": 0, "skipped": 0}
    for name, c, secs, rc in rows:
        failed = c["failures"] + c["errors"]
        passed = c["tests"] - failed - c["skipped"]
        print(f"  {name:28s} {passed:4d} passed {failed:3d} failed {c['skipped']:3d} skipped"
              f"  {secs:7.1f}s")
        if rc not in (0,) or failed or c["tests"] == 0 or (IN_CI and c["skipped"]):
            ok = False
        if not name.startswith("vm guest"):
            total["passed"] += passed
            total["failed"] += failed
            total["skipped"] += c["skipped"]
    if IN_CI and total["skipped"]:
        print("CI=true: a tier skipped tests, which CI does not allow")
    print(f"{total['passed']} passed, {total['failed']} failed, {total['skipped']} skipped")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
