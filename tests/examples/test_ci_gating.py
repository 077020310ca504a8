"""End to end on the cgroup backend: two real sweeps of the example models, the second
deliberately slowed (fifteen times the inferences per run), gated by ``compare`` and by budgets.

The slowdown is judged on CPU time, the workload's own kernel accounting: other sessions
loading the machine stretch wall time by up to 3× here.  CPU time moves too (the same sweep
measured twice on this shared 2-core machine differed by +14 % and +29 % in CPU time), so the
slowdown is large — 280 more inferences — and the test asserts only a change above +30 %.
(100 more were not enough: in one full run the small model's CPU time rose from a noisy
baseline by less than 30 %, 669 ms against a 676 ms budget.)
Needs root (real cgroups) and onnxruntime; about 40 s.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.examples.models import profiled_models

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "examples" / "benchmark"
MODELS = ("mobilenet_v2_0.25", "squeezenet_1.1")
REPEAT = 5
"""Runs per model on each side.  ``compare`` calls a change a regression only when Welch's
t says so at 95 %, and with 3 runs a side its degrees of freedom fall to ~2 when one side is
the noisy one (t = 4.3): in a fresh-clone CI run under ``stress-ng --cpu 1`` the slowed
squeezenet's CPU time was 1.96, 2.52 and 3.86 s against a baseline of 0.37–0.51 s, a change
of +560 % that was "no significant change".  5 runs give ~4 degrees of freedom (t = 2.8),
which that spread clears."""


def edgeprof(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "edgeprof", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def sweep(tmp: Path, out: str, iterations: int, *extra: str) -> subprocess.CompletedProcess[str]:
    models = ",".join(str(tmp / "models" / f"{m}.onnx") for m in MODELS)
    return edgeprof(
        "run", "--backend", "cgroup", "--cpus", "1", "--memory", "1g", "--repeat", str(REPEAT),
        "-m", models, "--out", str(tmp / out), *extra,
        "--", sys.executable, str(BENCH / "infer.py"), "--iterations", str(iterations),
        cwd=tmp,
    )  # fmt: skip


def test_compare_and_budgets_catch_a_slowed_sweep(tmp_path: Path) -> None:
    profiled_models(tmp_path / "models", *MODELS)

    base = sweep(tmp_path, "base", 20)
    assert base.returncode == 0, base.stderr
    runs = json.loads((tmp_path / "base" / "sweep.json").read_text())["runs"]
    cpu = {
        f"{m}.onnx": statistics.median(
            r["cpu"]["total_s"] for r in runs if r["name"] == f"{m}.onnx"
        )
        for m in MODELS
    }
    # Budgets 30 % above the baseline's CPU time, per model, in a budget file.
    budgets = tmp_path / "budgets.yml"
    budgets.write_text(
        "models:\n" + "".join(f"  {m}:\n    cpu_time: {1.3 * s:.3f}s\n" for m, s in cpu.items())
    )
    slow = sweep(tmp_path, "slow", 300, "--budgets", str(budgets), "--junit", "budgets.xml")
    assert slow.returncode == 3, slow.stdout + slow.stderr
    assert "Budgets (" in slow.stdout and "0 of 2 checks passed" in slow.stdout, slow.stdout
    suite = ET.parse(tmp_path / "budgets.xml").getroot().find("testsuite")
    assert suite is not None
    assert [
        (c.get("classname", "").split(" ")[0], c.find("failure") is not None) for c in suite
    ] == [  # every full stop of the name as junit_classname's look-alike
        (f"{m}.onnx".replace(".", "\u2024"), True) for m in MODELS
    ]
    cmp = edgeprof(
        "compare", "--json", "--summary", "compare.md", str(tmp_path / "base"),
        str(tmp_path / "slow"), cwd=tmp_path,
    )  # fmt: skip
    assert cmp.returncode == 3, cmp.stdout + cmp.stderr
    changes = json.loads(cmp.stdout)["changes"]
    cpu_verdicts = {
        c["label"]: (c["verdict"], c["change"]) for c in changes if c["metric"] == "cpu_time"
    }
    assert set(cpu_verdicts) == {f"{m}.onnx" for m in MODELS}
    for label, (verdict, change) in cpu_verdicts.items():
        assert verdict == "regression" and change > 0.3, (label, change)
    summary = (tmp_path / "compare.md").read_text()
    assert summary.startswith("## edgeprof compare\n")
    assert summary.count("| CPU time |") == 2 and "❌ regression" in summary

    # Noise only: the baseline against itself has no regression.
    same = edgeprof("compare", str(tmp_path / "base"), str(tmp_path / "base"), cwd=tmp_path)
    assert same.returncode == 0, same.stdout
    # "…, 1 not tested (not enough repeats)" where a metric has too few figures (a run too
    # short for an average memory): no regression and no improvement, whatever follows.
    verdict = same.stdout.splitlines()[-1]
    assert verdict.startswith("0 regressions, 0 improvements"), verdict
    assert verdict.endswith(" against the baseline"), verdict
