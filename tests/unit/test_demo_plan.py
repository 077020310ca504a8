"""What ``make demo`` would run (``make -n``): the models it generates are the ones it runs."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_demo_generates_only_the_models_it_runs() -> None:
    """The generator had also written squeezenet_1.1.onnx (4.7 MiB) into .demo/models,
    which neither the demo nor the README mentions (a docs auditor's)."""
    plan = subprocess.run(
        ["make", "-n", "demo"], cwd=REPO, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    commands = [shlex.split(c) for c in plan.replace("\\\n", " ").splitlines()]
    [make_models] = [c for c in commands if "examples/benchmark/make_models.py" in c]
    [run] = [c for c in commands if c[1:2] == ["run"]]
    generated = make_models[make_models.index("--only") + 1 :]
    assert generated == [f"mobilenet_v2_{w}" for w in ("0.25", "0.5", "0.75", "1.0")]
    assert run[run.index("-m") + 1].split(",") == [f".demo/models/{n}.onnx" for n in generated]
