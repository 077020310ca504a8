"""``edgeprof layers`` under a fractional CPU share on the real kernel: the worker's timed
iterations reach the runner's stall check, each layer's ``quota_stalls`` is recorded, and
every layer shorter than the quota's period is named in the warning (its median measures
the layer at full speed).  Bounds come from the run's own figures: the period it applied and
the medians it measured."""

from __future__ import annotations

import importlib.util
import re
import statistics
from pathlib import Path

import pytest

from edgeprof.cpu_units import parse_cpuset
from edgeprof.layers.request import make_request
from edgeprof.layers.run import run_layers
from edgeprof.model import Limits
from tests.conftest import require

# The relay of the worker's iterations to the runner is edgeprof's own orchestration; the
# quota's stalls it feeds are the run's, which the cgroup v2 guests test
# (test_cpu_period_kernel.py).  And under TCG, importing torch would cost a guest minutes.
pytestmark = pytest.mark.not_in_vm

MODEL = """\
import torch


def net():
    return torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
"""


def test_short_layers_under_a_quarter_cpu_are_named(
    mechanism: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require(importlib.util.find_spec("torch") is not None, "edgeprof layers needs torch")
    (tmp_path / "w.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    request = make_request("w.py:net", ["16"], 4, iterations=20, warmup=1)
    run = run_layers(request, Limits(cpus=0.25), backend="cgroup")
    assert run.ok, run.failure(None)
    period = run.result.cpu.period_s
    assert period is not None and period > 0
    # The user named no phase: the worker's are not in the result the table prints.
    assert run.result.phases == () and run.result.latency is None
    assert not any(w.startswith("phase 'layer:") for w in run.result.warnings)
    saved = run.to_results()
    assert (saved.meta or {})["runs"][0]["cpu_period_s"] == period
    short = [rec["layer"] for rec in run.layers if statistics.median(rec["times_s"]) < period]
    assert short  # a Linear of 16×16 on 4 samples takes microseconds, under any period
    [warning] = [w for w in run.warnings if "at full speed" in w]
    named = re.search(r"median time of layer\(s\) (.+?) measures", warning)
    assert named is not None
    assert set(short) <= set(parse_cpuset(named.group(1).replace(" ", "")))
    # The runner received every timed iteration (3 layers × 20) in 3 phases of its own.
    assert run.result.events is not None
    assert run.result.events.iterations.kept == 60
    assert run.result.events.phases.kept == 3
    # Where it could put the stalls on them (it reads the throttled time as the lines
    # arrive, which a loaded host may not allow for microsecond layers), a layer's figures
    # are in the file; the iterations counted are the timed ones (the first one's stall has
    # no reading at its start).
    for entry in saved.profile_data:
        stalls = entry.extra.get("quota_stalls")
        if stalls is not None:
            assert 1 <= stalls["iterations"] <= 20
            assert 0 <= stalls["throttled"] <= stalls["iterations"]
