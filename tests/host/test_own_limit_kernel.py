"""A workload running as root that writes its own group's memory limit (a tester's
``raise.py`` and ``lower.py``): the result keeps the limit edgeprof set, says what the
workload changed it to, and gives no fit verdict.  Before, ``--memory 64m`` with the limit
raised and 200 MiB allocated read "fits at the edge … peak 207.6MiB", and ``--memory 512m``
with it lowered to 32 MiB "does not fit: OOM-killed at a peak of 32.0MiB; it needs more than
512.0MiB"."""

from __future__ import annotations

import sys
from pathlib import Path

import edgeprof
from edgeprof.analysis.headroom import limit_fit
from edgeprof.model import LimitChange, Limits, Termination
from edgeprof.report.results import render_plain

PY = sys.executable
WORKLOAD = Path(__file__).resolve().parents[1] / "workloads" / "own_limit.py"
MIB = 1 << 20


def test_a_raised_memory_limit_is_said_and_has_no_verdict(mechanism: str) -> None:
    r = edgeprof.profile([PY, str(WORKLOAD), "raise", "0", "100"], Limits(memory="64m"),
                         interval=0.05)  # fmt: skip
    assert r.termination is Termination.EXITED and r.exit_code == 0
    assert r.memory.peak_bytes is not None and r.memory.peak_bytes > 100 * MIB
    assert r.limits.memory == 64 * MIB
    assert r.limits_changed == (LimitChange("memory_bytes", 64 * MIB, None),)
    assert limit_fit(r) is None
    text = render_plain([r])
    assert "the workload changed its memory limit from 64.0MiB to unlimited: no verdict" in text
    # No verdict of the limit's (": fits", "fits at the edge", "does not fit"); the memory's
    # growth may be said (the workload allocates through the run), in words of a limit's fit.
    assert not any(v in text for v in (": fits", "fits at the edge", "does not fit")), text


def test_a_lowered_memory_limit_is_said_and_has_no_verdict(mechanism: str) -> None:
    r = edgeprof.profile([PY, str(WORKLOAD), "lower", str(32 * MIB), "100"],
                         Limits(memory="512m"), interval=0.05)  # fmt: skip
    assert r.termination is Termination.OOM
    assert r.limits.memory == 512 * MIB
    assert r.limits_changed == (LimitChange("memory_bytes", 512 * MIB, 32 * MIB),)
    assert limit_fit(r) is None
    assert "needs more than" not in render_plain([r])
