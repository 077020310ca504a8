"""examples/benchmark: the generated ONNX models are the architectures they claim, load in
ONNX Runtime, are reproducible byte for byte, and infer.py runs.  Needs onnx, onnxruntime and
numpy (skipped without them, except in CI).  About 5 s."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import require

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "examples" / "benchmark"
MOBILENETS = ["mobilenet_v2_0.25", "mobilenet_v2_0.5", "mobilenet_v2_0.75", "mobilenet_v2_1.0"]
ALL = [*MOBILENETS, "squeezenet_1.1"]

# Parameter counts with BatchNorm folded into conv biases (computed here, and cross-checked
# against torchvision below: BN adds one more value per folded channel).
EXPECTED_PARAMS = {
    "mobilenet_v2_0.25": 1_513_784,
    "mobilenet_v2_0.5": 1_959_408,
    "mobilenet_v2_0.75": 2_623_104,
    "mobilenet_v2_1.0": 3_487_816,
    "squeezenet_1.1": 1_235_496,  # torchvision's squeezenet1_1 exactly (it has no BN)
}
TORCHVISION_MOBILENET_V2_1_0 = 3_504_872  # sum(p.numel()) of torchvision's mobilenet_v2()


def _missing() -> list[str]:
    return [m for m in ("onnx", "onnxruntime", "numpy") if importlib.util.find_spec(m) is None]


@pytest.fixture(scope="module")
def make_models() -> ModuleType:
    missing = _missing()
    require(
        not missing,
        f"examples/benchmark needs {', '.join(missing)}: pip install onnx onnxruntime numpy",
    )
    spec = importlib.util.spec_from_file_location("bench_make_models", BENCH / "make_models.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def built(
    make_models: ModuleType, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[Path, int]]:
    """Every model, generated once for the module: name -> (path, reported parameter count)."""
    out = tmp_path_factory.mktemp("models")
    return {name: make_models.build(name, out) for name in ALL}


def _load(path: Path) -> Any:
    import onnx

    return onnx.load(str(path))


def _weights(model: Any) -> dict[str, Any]:
    from onnx import numpy_helper

    return {
        i.name: numpy_helper.to_array(i)
        for i in model.graph.initializer
        if not i.name.startswith("relu6_")
    }  # Clip bounds: constants, not parameters


def test_every_model_is_built_and_passes_the_checker(built: dict[str, tuple[Path, int]]) -> None:
    import onnx

    assert sorted(built) == sorted(ALL)
    for name, (path, _) in built.items():
        assert path.name == f"{name}.onnx"
        model = _load(path)
        onnx.checker.check_model(model, full_check=True)
        assert model.opset_import[0].version >= 13
        assert [i.name for i in model.graph.input] == ["input"]
        assert [o.name for o in model.graph.output] == ["logits"]


def test_parameter_counts(built: dict[str, tuple[Path, int]]) -> None:
    counts = {}
    for name, (path, reported) in built.items():
        counted = sum(int(w.size) for w in _weights(_load(path)).values())
        assert counted == reported, name
        counts[name] = counted
    assert counts == EXPECTED_PARAMS
    mobilenets = [counts[n] for n in MOBILENETS]
    assert mobilenets == sorted(set(mobilenets)), "must rise strictly with width"
    # The ballpark: 1.0 ~3.5 M; 0.25 ~1.5 M (the 1280-wide head and the FC do not shrink).
    assert 3_400_000 < counts["mobilenet_v2_1.0"] < 3_600_000
    assert 1_400_000 < counts["mobilenet_v2_0.25"] < 1_600_000
    assert 1_200_000 < counts["squeezenet_1.1"] < 1_300_000
    # FC 1280x1000 + 1000 in every width: 1,281,000 of 0.25's 1,513,784.
    fc = _weights(_load(built["mobilenet_v2_0.25"][0]))["fc_0.weight"]
    assert fc.shape == (1000, 1280)


def test_mobilenet_v2_matches_torchvision_with_batchnorm(
    built: dict[str, tuple[Path, int]],
) -> None:
    """Unfolding BN (weight and bias per channel, for our one bias) gives torchvision's count."""
    w = _weights(_load(built["mobilenet_v2_1.0"][0]))
    conv_bias = sum(int(v.size) for k, v in w.items() if k.endswith(".bias") and k != "fc_0.bias")
    assert EXPECTED_PARAMS["mobilenet_v2_1.0"] + conv_bias == TORCHVISION_MOBILENET_V2_1_0


def test_mobilenet_v2_structure(built: dict[str, tuple[Path, int]]) -> None:
    model = _load(built["mobilenet_v2_1.0"][0])
    ops: dict[str, int] = {}
    for node in model.graph.node:
        ops[node.op_type] = ops.get(node.op_type, 0) + 1
    # stem + (block 1: dw, project) + 16 blocks x (expand, dw, project) + head = 52 convs;
    # a residual add in every block but the first of each stage change (17 - 7 = 10).
    assert ops == {
        "Conv": 52,
        "Clip": 35,
        "Add": 10,
        "GlobalAveragePool": 1,
        "Flatten": 1,
        "Gemm": 1,
    }
    w = _weights(model)
    depthwise = [node for node in model.graph.node if node.name.startswith("dw_")]
    assert len(depthwise) == 17
    for node in depthwise:
        group = next(a.i for a in node.attribute if a.name == "group")
        weight = w[node.input[1]]
        assert weight.shape[1:] == (1, 3, 3) and weight.shape[0] == group
    # Channel rounding: 0.75 x 24 = 18 -> 24, 0.75 x 320 = 240; the head stays at 1280.
    w75 = _weights(_load(built["mobilenet_v2_0.75"][0]))
    assert w75["project_1.weight"].shape[0] == 24
    assert w75["project_16.weight"].shape[0] == 240
    assert w75["head_0.weight"].shape[:2] == (1280, 240)


def test_generation_is_deterministic(
    make_models: ModuleType, built: dict[str, tuple[Path, int]], tmp_path: Path
) -> None:
    """The CLI in a fresh process writes the same bytes as the in-process build."""
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH / "make_models.py"),
            "--out",
            str(tmp_path),
            "--only",
            "mobilenet_v2_0.25",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "mobilenet_v2_0.25.onnx" in proc.stdout and "1,513,784 params" in proc.stdout
    assert [p.name for p in tmp_path.iterdir()] == ["mobilenet_v2_0.25.onnx"]
    again = (tmp_path / "mobilenet_v2_0.25.onnx").read_bytes()
    assert again == built["mobilenet_v2_0.25"][0].read_bytes()


def test_onnxruntime_inference(built: dict[str, tuple[Path, int]]) -> None:
    import numpy as np
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    for name in ("mobilenet_v2_0.25", "squeezenet_1.1"):
        sess = ort.InferenceSession(
            str(built[name][0]), sess_options=so, providers=["CPUExecutionProvider"]
        )
        x = np.random.default_rng(0).random((1, 3, 224, 224), dtype=np.float32)
        (y,) = sess.run(None, {"input": x})
        assert y.shape == (1, 1000), name
        assert np.isfinite(y).all(), name


def test_infer_script(built: dict[str, tuple[Path, int]]) -> None:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH / "infer.py"),
            str(built["mobilenet_v2_0.25"][0]),
            "--iterations",
            "3",
            "--warmup",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "output [1, 1000]" in out
    assert "threads: intra-op 1 (OMP_NUM_THREADS), inter-op 1" in out
    assert "1 warm-up + 3 timed runs, batch 1" in out
    (line,) = [ln for ln in out.splitlines() if ln.startswith("latency ms:")]
    fields = line.split()
    for key in ("mean", "p50", "p95", "min"):
        assert float(fields[fields.index(key) + 1]) > 0, line


def test_env_template_is_shell_syntax() -> None:
    bash = shutil.which("bash")
    require(bash is not None, "bash is not installed")
    assert bash is not None
    keys = [
        "IMAGEREPO",
        "PIPREQUIREMENTS",
        "DIR",
        "SCRIPT",
        "COMMAND",
        "SAMPLETIME",
        "OUTPUTFILE",
        "DOCKCPUS",
        "DOCKMEMORY",
    ]
    script = 'set -eu; source "$1"; ' + "; ".join(f'echo "{k}=${k}"' for k in keys)
    proc = subprocess.run(
        [bash, "-c", script, "bash", str(BENCH / "env_benchmark.template")],
        capture_output=True,
        text=True,
        timeout=10,
        env={},
    )
    assert proc.returncode == 0, proc.stderr
    values = dict(line.split("=", 1) for line in proc.stdout.splitlines())
    assert values["IMAGEREPO"].startswith("python:")
    assert values["PIPREQUIREMENTS"] == "onnxruntime numpy"
    assert (REPO / values["DIR"] / values["SCRIPT"]).is_file()
    assert values["COMMAND"] == "python3"
    assert values["SAMPLETIME"] == "0.1" and values["OUTPUTFILE"] == "out.txt"
    assert values["DOCKCPUS"] == "1" and values["DOCKMEMORY"] == "1g"
