"""edgeprof layers end to end: real torch in the worker, real cgroups around it.

The models are examples/layers/models.py's (torch.nn only, random weights).  Each test runs
the CLI as a user would, from the repository root; each run costs about 3 s, most of it the
torch import inside the limited run.  Needs root (cgroups) and torch, else skipped (failed in
CI).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from edgeprof.layers import results
from tests.conftest import require
from tests.host.conftest import run_groups

REPO = Path(__file__).resolve().parents[2]
MODELS = "examples.layers.models"
# `--cpus 1` is pinned to the first core we may use, which need not be CPU 0.
FIRST_CPU = min(os.sched_getaffinity(0))
VIT_SMALL = ["blocks=3", "image_size=32", "patch=8", "dim=64", "heads=2", "classes=10"]


LAUNCHED: list[int] = []
"""Pids of the edgeprof processes a test started (run groups are named after them)."""


@pytest.fixture(autouse=True)
def _needs_root_and_torch() -> Iterator[None]:
    require(importlib.util.find_spec("torch") is not None,
            "edgeprof layers needs torch: pip install torch==2.13.0 (the CPU wheel)")
    require(os.geteuid() == 0, "edgeprof layers runs under real cgroups: needs root")
    LAUNCHED.clear()
    yield
    # Only our own: other sessions on this machine create and remove groups meanwhile.
    ours = {g for g in run_groups() if int(g.name.split("-")[1]) in LAUNCHED}
    assert ours == set(), "a run group was left behind"


def layers(*args: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "edgeprof", "layers", *args]
    with subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as p:
        LAUNCHED.append(p.pid)
        out, err = p.communicate(timeout=120)
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def _load(path: Path, name: str) -> Any:
    # By path: under pytest, the name "examples" is tests/examples.
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def vit(*extra: str) -> list[str]:
    args = [f"{MODELS}:vit_encoder", "--input-shape", "3,32,32", "--batch-size", "4",
            "--iterations", "3", "--warmup", "1", "--memory", "1g"]
    for a in VIT_SMALL:
        args += ["--factory-arg", a]
    return args + list(extra)


def test_split_granularities() -> None:
    import torch

    from edgeprof.workload.layers import split_layers

    models = _load(REPO / "examples" / "layers" / "models.py", "_layers_models")
    small_cnn, vit_encoder = models.small_cnn, models.vit_encoder
    cnn = small_cnn()
    names = [n for n, _ in split_layers(torch, cnn, "children")]
    assert names == ["stem", "block1", "block2", "block3", "pool", "classifier"]
    blocks = [n for n, _ in split_layers(torch, cnn, "blocks")]
    assert blocks == ["stem.0", "stem.1", "block1.0.0", "block1.0.1", "block2.0.0", "block2.0.1",
                      "block3.0.0", "block3.0.1", "pool.0", "pool.1", "classifier"]
    v = vit_encoder(blocks=3, image_size=32, patch=8, dim=64, heads=2)
    # The blocks' ModuleList has no forward: it is always expanded.
    assert [n for n, _ in split_layers(torch, v, "children")] == [
        "embed", "blocks.0", "blocks.1", "blocks.2", "head"]
    leaves = [n for n, _ in split_layers(torch, v, "leaves")]
    assert leaves[:3] == ["embed.proj", "blocks.0.norm1", "blocks.0.attn.out_proj"]
    assert [n for n, _ in split_layers(torch, torch.nn.Linear(2, 2), "children")] == ["(model)"]


def test_cnn_layers_shapes_memory_and_a_heavier_layer(tmp_path: Path) -> None:
    out = tmp_path / "cnn.yml"
    r = layers(f"{MODELS}:small_cnn", "--factory-arg", "heavy=2", "--input-shape", "3,64,64",
               "--batch-size", "4", "--iterations", "5", "--warmup", "1", "--cpus", "1",
               "--memory", "1g", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert f"wrote {out}: layers 1-6 of 6;" in r.stdout
    assert "Final Usage Stats" in r.stdout and r.stderr == ""
    res = results.load(out)
    assert (res.layers, res.batch_size, res.dtype) == (6, 4, "torch.float32")
    assert res.model_name == f"{MODELS}:small_cnn"
    data = {e.layer: e for e in res.profile_data}
    feat = [[16, 64, 64]]
    assert [(e.shape_in, e.shape_out) for e in res.profile_data] == [
        ([[3, 64, 64]], feat), (feat, feat), (feat, feat), (feat, feat), (feat, [[16]]),
        ([[16]], [[10]])]
    # Parameters and buffers, exactly: conv 3->16 (3x3), 16->16 (x1, x8 for the heavy block 2,
    # x1), none in the pool, a 16->10 linear layer.  float32: 4 bytes each.
    params = [16 * 3 * 9 + 16, 16 * 16 * 9 + 16, 8 * (16 * 16 * 9 + 16), 16 * 16 * 9 + 16, 0,
              16 * 10 + 10]
    assert [e.extra["param_bytes"] for e in res.profile_data] == [4 * p for p in params]
    assert [e.memory for e in res.profile_data] == [4 * p / 1e6 for p in params]
    fmap = 4 * 16 * 64 * 64 * 4  # batch 4, 16x64x64, float32
    assert [e.extra["output_bytes"] for e in res.profile_data] == [
        fmap, fmap, fmap, fmap, 4 * 16 * 4, 4 * 10 * 4]
    # The stem's conv output and its ReLU's output are alive together: two feature maps.
    assert data[1].extra["alloc_peak_bytes"] == 2 * fmap
    for e in res.profile_data:
        stats = e.extra["time_stats"]
        assert e.time > 0 and stats["iterations"] == 5
        assert stats["min"] <= e.time == stats["median"] <= stats["p95"] <= stats["max"]
        assert e.extra["rss_peak_bytes"] > 0
    # Block 2 does eight times block 1's and block 3's work on the same shapes.
    assert data[3].time > 2 * data[2].time and data[3].time > 2 * data[4].time
    run = res.meta["runs"][0]  # type: ignore[index]
    assert run["termination"] == "exited" and run["threads"] == 1
    assert run["applied_limits"]["describe"] == f"cpus=1, cpuset={FIRST_CPU}, memory=1.0GiB"
    assert 0 < run["profile_s"] < run["wall_s"]


def test_vit_in_two_layer_ranges_then_export(tmp_path: Path) -> None:
    out = tmp_path / "vit.yml"
    first = layers(*vit("-L", "2", "-o", str(out)))
    assert first.returncode == 0, first.stderr
    assert f"wrote {out}: layers 1-2 of 5 (still missing: 3-5);" in first.stdout
    second = layers(*vit("-l", "3", "-o", str(out)))
    assert second.returncode == 0, second.stderr
    assert f"wrote {out}: layers 3-5 of 5;" in second.stdout
    res = results.load(out)
    assert res.complete and res.layers == 5
    tokens = [[17, 64]]  # 16 patches of 8x8 and the class token, width 64
    assert [(e.shape_in, e.shape_out) for e in res.profile_data] == [
        ([[3, 32, 32]], tokens), (tokens, tokens), (tokens, tokens), (tokens, tokens),
        (tokens, [[10]])]
    assert [e.extra["type"] for e in res.profile_data] == [
        "PatchEmbed", "EncoderBlock", "EncoderBlock", "EncoderBlock", "Head"]
    assert all(e.time > 0 for e in res.profile_data)
    meta: Any = res.meta
    assert [run["layers"] for run in meta["runs"]] == [[1, 2], [3, 5]]
    # A third run for layers already there is refused before anything starts.
    again = layers(*vit("-l", "2", "-o", str(out)))
    assert again.returncode == 2 and again.stdout == ""
    assert again.stderr == (
        f"edgeprof: error: {out} already holds layers 2-5 (missing: none); "
        "choose --layer-start/--layer-end or another -o\n")
    models, types = tmp_path / "models.yml", tmp_path / "device_types.yml"
    assert layers("export", "models", "-i", str(out), "-o", str(models)).returncode == 0
    dt = layers("export", "device-types", "edge-1cpu", "-i", str(out), "-o", str(types),
                "--bw-mbps", "100")
    assert dt.returncode == 0, dt.stderr
    entry = yaml.safe_load(models.read_text())[f"{MODELS}:vit_encoder"]
    assert entry["parameters_in"] == 3 * 32 * 32
    assert entry["parameters_out"] == [17 * 64] * 4 + [10]
    dev = yaml.safe_load(types.read_text())["edge-1cpu"]
    assert dev["mem_MB"] == 1073 and dev["bw_Mbps"] == 100  # --memory 1g, in 10^6 bytes
    (profile,) = dev["model_profiles"][f"{MODELS}:vit_encoder"]
    assert profile["time_s"] == [e.time for e in res.profile_data]


def test_oom_is_a_result_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "oom.yml"
    # The stem's output alone is 32 x 64 x 256 x 256 float32 = 512 MiB, over the 400 MiB limit
    # (the torch import and the model fit in it).
    r = layers(f"{MODELS}:small_cnn", "--factory-arg", "channels=64", "--input-shape",
               "3,256,256", "--batch-size", "32", "--memory", "400m", "-o", str(out))
    assert r.returncode == 137
    assert "Traceback" not in r.stderr + r.stdout
    (line,) = r.stderr.splitlines()
    assert line.startswith("edgeprof: layers: the run ended oom (exit 137) under memory=400.0MiB")
    assert line.endswith(f"during layer 1 (stem) of 6; no layer was profiled before it; "
                         f"nothing written to {out}")
    assert "oom (137)" in r.stdout  # the whole-run table
    assert not out.exists()


def test_a_model_that_is_not_a_chain_of_its_leaves_fails_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "leaves.yml"
    r = layers(*vit("--granularity", "leaves", "-o", str(out)))
    assert r.returncode == 3
    (line,) = r.stderr.splitlines()
    assert line.startswith("edgeprof: layers: the model failed (exit 3): layer 2 "
                           "(blocks.0.norm1: LayerNorm) failed: RuntimeError: ")
    assert "try another --granularity" in line
    assert not out.exists()


def test_a_file_factory_whose_forward_is_not_the_chain_gets_a_warning(tmp_path: Path) -> None:
    model = tmp_path / "residual.py"
    model.write_text(
        "import torch\n"
        "class Residual(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)\n"
        "    def forward(self, x):\n"
        "        return self.b(self.a(x)) + x  # the skip connection is in no child\n"
    )
    out = tmp_path / "r.yml"
    r = layers(f"{model}:Residual", "--input-shape", "8", "--batch-size", "2", "--iterations",
               "2", "--warmup", "0", "--memory", "1g", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stderr == (
        "edgeprof: warning: the layers chained one after the other (granularity children) do "
        "not give the model's own output: its forward is not a chain of these modules (try "
        "another --granularity, or build the model as an nn.Sequential)\n")
    res = results.load(out)
    assert [(e.extra["name"], e.shape_in, e.shape_out) for e in res.profile_data] == [
        ("a", [[8]], [[8]]), ("b", [[8]], [[8]])]
    assert res.meta["runs"][0]["warnings"][0].startswith("the layers chained")  # type: ignore[index]


def test_a_sequential_whose_output_is_nan_is_a_chain_with_a_nan_warning(tmp_path: Path) -> None:
    """NaN ≠ NaN had made a plain Sequential "not a chain of these modules"; its output's
    NaN is what deserves the warning."""
    model = tmp_path / "nan.py"
    model.write_text(
        "import torch\n"
        "class Nan(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x * float('nan')\n"
        "def build():\n"
        "    return torch.nn.Sequential(torch.nn.Linear(8, 8), Nan(), torch.nn.ReLU())\n"
    )
    out = tmp_path / "n.yml"
    r = layers(f"{model}:build", "--input-shape", "8", "--batch-size", "2", "--iterations",
               "1", "--warmup", "0", "--memory", "1g", "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stderr == (
        "edgeprof: warning: the model's output holds NaN or infinite values: the layers were "
        "timed computing them (check the weights, the input and --dtype)\n")
    res = results.load(out)
    assert len(res.profile_data) == 3
    # One timed iteration has no spread: `sd: null`, not 0.0 (and the table was printed).
    assert [e.extra["time_stats"]["sd"] for e in res.profile_data] == [None] * 3
    assert "Layers of " in r.stdout
