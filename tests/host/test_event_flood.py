"""A workload that floods edgeprof with events: 50 000 distinct phase names, 50 000 marks and
300 000 iterations, through the real pipe of a run on this kernel's cgroups.

edgeprof runs through its CLI in a process of the test's (as in ``test_load.py``) that, once
the run is over and ``result.json`` written, says so on a pipe and waits: the test then reads
its peak resident memory (VmHWM) from /proc.  No timing is involved: the workload ends when
it has written everything, the run when the workload has ended.

The same test measures a run of a few phases and marks that fills the iteration store (as
any run reporting that many iterations does); the flood must stay within a tenth of its
peak, and its ``result.json`` within what the caps allow.  Before the caps this flood took
edgeprof to 290 MB (28 MB with no events) and wrote 24 MB of JSON.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from edgeprof.measure.events import MAX_ITERATIONS, MAX_MARKS, MAX_PHASES
from edgeprof.model import LatencyStats, Mark, PhaseStats, Throttling
from edgeprof.workload.instrument import MAX_NAME
from tests.conftest import HANG_S
from tests.host.test_load import PY, REPO, _status

# Orchestration, not cgroup mechanics: the v2 guest leaves it out (see pyproject's markers).
pytestmark = pytest.mark.not_in_vm

EDGEPROF = """
import os, sys
from edgeprof.cli import main
done = int(sys.argv[1])
rc = main(sys.argv[2:])
os.write(done, b"%d" % rc)
os.close(done)
sys.stdin.read()  # held until the test has read /proc/PID/status
"""

WORKLOAD = """
import sys
import edgeprof
phases, marks, iterations = (int(a) for a in sys.argv[1:])
for i in range(phases):
    with edgeprof.phase(f"phase-{i}"):
        pass
for i in range(marks):
    edgeprof.mark(f"mark-{i}")
for i in range(iterations):
    with edgeprof.iteration(items=2):
        pass
"""

FLOOD = (50_000, 50_000, 3 * MAX_ITERATIONS)
FEW = (3, 3, MAX_ITERATIONS)


def _run(tmp_path: Path, name: str, counts: tuple[int, int, int]) -> tuple[int, Path]:
    """edgeprof's VmHWM at the end of one run (bytes), and its result.json."""
    out = tmp_path / name
    workload = tmp_path / "workload.py"
    workload.write_text(WORKLOAD)
    r, w = os.pipe()
    proc = subprocess.Popen(
        [
            PY,
            "-c",
            EDGEPROF,
            str(w),
            "run",
            "--out",
            str(out),
            "--",
            PY,
            str(workload),
            *map(str, counts),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        pass_fds=(w,),
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    os.close(w)
    try:
        with os.fdopen(r, "rb") as done:
            rc = done.read()  # the run is over (or edgeprof died: EOF)
        assert rc == b"0", proc.stderr.read() if proc.stderr else rc
        hwm = _status(proc.pid)[1]
    finally:
        _, err = proc.communicate(b"", timeout=HANG_S)
    assert proc.returncode == 0, err.decode()
    return hwm, out / "result.json"


def _record_bytes(record: Any) -> int:
    """What one more record adds to a list nested as phases and marks are in result.json."""
    one, two = ({"k": [dataclasses.asdict(record)] * n} for n in (1, 2))
    return len(json.dumps(two, indent=2)) - len(json.dumps(one, indent=2))


def _largest_records() -> tuple[int, int]:
    """The largest phase and mark records: the longest name, every field set, long floats."""
    x = 1.2345678901234567e-05
    throttling = Throttling(10**9, 10**9, x, x, x, x, x, ("p50", "p90", "p95", "p99"))
    lat = LatencyStats(10**12, x, x, x, x, x, x, x, x, 2**63, x, throttling, x)
    phase = PhaseStats(
        "é" * MAX_NAME, 10**9, x, x, x, x, 2**62, "sampled", 2**62, False, "interrupted", lat
    )
    mark = Mark("é" * MAX_NAME, x, x, 2**62)
    return _record_bytes(phase), _record_bytes(mark)


def test_a_flood_of_events_keeps_edgeprofs_memory_and_result_bounded(
    mechanism: str, tmp_path: Path
) -> None:
    few_hwm, few_path = _run(tmp_path, "few", FEW)
    flood_hwm, flood_path = _run(tmp_path, "flood", FLOOD)
    few, flood = (json.loads(p.read_text()) for p in (few_path, flood_path))
    print(
        f"VmHWM: {few_hwm} B with {FEW}, {flood_hwm} B with {FLOOD}; result.json: "
        f"{few_path.stat().st_size} B, {flood_path.stat().st_size} B"
    )

    # Counted exactly, kept to the caps.
    phases, marks, iterations = FLOOD
    assert flood["events"] == {
        "lines": 2 * phases + marks + iterations,
        "malformed": 0,
        "phases": {"cap": MAX_PHASES, "kept": MAX_PHASES, "over": phases - MAX_PHASES},
        "marks": {"cap": MAX_MARKS, "kept": MAX_MARKS, "over": marks - MAX_MARKS},
        "iterations": {
            "cap": MAX_ITERATIONS,
            "kept": MAX_ITERATIONS,
            "over": iterations - MAX_ITERATIONS,
        },
    }
    assert [p["name"] for p in flood["phases"]] == [f"phase-{i}" for i in range(MAX_PHASES)]
    assert [m["name"] for m in flood["marks"]] == [f"mark-{i}" for i in range(MAX_MARKS)]
    lat = flood["latency"]
    assert (lat["count"], lat["items"]) == (iterations, 2 * iterations)
    assert lat["percentiles_error"] == 0.01 and lat["min_s"] <= lat["p50_s"] <= lat["max_s"]
    warnings = flood["warnings"]
    for said in (
        f"more than {MAX_PHASES} distinct phases: the first {MAX_PHASES} are kept, "
        f"{phases - MAX_PHASES} occurrence(s)",
        f"more than {MAX_MARKS} marks: the first {MAX_MARKS} are kept, {marks - MAX_MARKS} later",
        f"more than {MAX_ITERATIONS} iterations: {iterations - MAX_ITERATIONS} past the first",
    ):
        assert sum(said in w for w in warnings) == 1, (said, warnings)
    assert few["events"]["iterations"]["over"] == 0 and few["latency"]["percentiles_error"] is None
    assert not any("more than" in w for w in few["warnings"])

    # The file: the run with few events and at most the caps' worth of the largest records.
    phase_bytes, mark_bytes = _largest_records()
    bound = few_path.stat().st_size + MAX_PHASES * phase_bytes + MAX_MARKS * mark_bytes
    assert flood_path.stat().st_size <= bound, (flood_path.stat().st_size, bound)

    # edgeprof's own peak: what the flood adds past the caps is small against the run itself.
    assert flood_hwm <= 1.1 * few_hwm, (few_hwm, flood_hwm)
