"""What a run without a GPU says of the GPU options given: a GPU budget beside ``--gpus none``
is refused before the run, and a unified-memory device's verdict says it held the host's
memory alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgeprof.cli import main

from .test_storage_speed import RUN


@pytest.mark.parametrize(
    ("args", "said"),
    [(["--gpu-memory", "1g"], "--gpus none measures no GPU, so --gpu-memory 1g could only "
      "fail as not measured: leave it out, or give --gpus the GPUs to measure"),
     (["--max-gpu-memory", "1g", "--max-energy", "5J"], "--gpus none measures no GPU, so "
      "--max-gpu-memory and --max-energy could only fail as not measured: leave them out")],
)  # fmt: skip
def test_a_gpu_budget_beside_gpus_none_is_refused(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    out = tmp_path / "o"
    assert main([*RUN, "--gpus", "none", *args, "--out", str(out), "--", "true"]) == 2
    err = capfd.readouterr().err
    assert said in err, err
    assert not out.exists()
    # Without the budget, --gpus none runs.
    assert main([*RUN, "--gpus", "none", "--", "true"]) == 0


def test_a_budget_file_gpu_budget_beside_gpus_none_is_refused(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    budgets = tmp_path / "budgets.yml"
    budgets.write_text("default:\n  energy: 5J\n")
    argv = [*RUN, "--gpus", "none", "--budgets", str(budgets), "--", "true"]
    assert main(argv) == 2
    assert f"so {budgets}'s energy could only fail" in capfd.readouterr().err
    # A shared file's budget of another model is not this run's: it runs.
    budgets.write_text("models:\n  detector_gpu.onnx:\n    energy: 5J\n")
    assert main(argv) == 0
    # That model's own run is held to it, and refused.
    named = [*RUN, "--gpus", "none", "--budgets", str(budgets), "--name", "detector_gpu.onnx"]
    assert main([*named, "--", "true"]) == 2
    assert f"so {budgets}'s energy could only fail" in capfd.readouterr().err


def test_bench_refuses_a_gpu_budget_beside_gpus_none(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "b"
    argv = ["bench", "m.py:f", "--gpus", "none", "--gpu-memory", "1g", "--out", str(out)]
    assert main(argv) == 2
    assert "--gpus none measures no GPU, so --gpu-memory 1g could only fail" in (
        capfd.readouterr().err
    )
    assert not out.exists()


def test_a_gpu_memory_limit_hidden_by_gpus_none_sends_no_one_to_doctor() -> None:
    """The library has no gate: its result says why the limit held nothing."""
    import edgeprof
    from tests.fakes import FakeBackend

    r = edgeprof.profile(["true"], backend=FakeBackend(), gpus="none", gpu_memory="1g")
    assert r.warnings[-1] == (
        "GPU memory limit 1.0GiB: --gpus none measured no GPU, so the run was not held to it"
    )


def test_a_unified_memory_device_without_a_gpu_says_its_verdict_is_the_hosts(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    cat = tmp_path / "boards.yml"
    cat.write_text("devices:\n  orin:\n    cores: 2\n    memory: 1g\n    unified_memory: true\n")
    assert main([*RUN, "--device", "orin", "--devices", str(cat), "--", "true"]) == 0
    out = capfd.readouterr().out
    assert (
        "device orin's CPU and GPU share its memory (unified_memory), but no GPU was measured: "
        "the memory verdict holds this run's host memory alone"
    ) in out, out
    # A device with a memory of its own for the GPU says nothing of the kind.
    cat.write_text("devices:\n  dgpu:\n    cores: 2\n    memory: 1g\n")
    assert main([*RUN, "--device", "dgpu", "--devices", str(cat), "--", "true"]) == 0
    assert "unified_memory" not in capfd.readouterr().out


def test_a_recipe_whose_parts_ask_no_gpu_says_so_of_the_merges_gpu_budget() -> None:
    from edgeprof.cli.recipe import render_recipe

    run = ["--repeat", "2", "--cpus", "1", "--memory", "1g"]
    notes: list[str] = []
    gated = [*run, "--gpu-memory", "1g", "--max-energy", "5J", "--", "python", "infer.py"]
    files, _ = render_recipe("slurm", 2, gated, {}, notes=notes)
    assert notes == [
        "the merge gates --gpu-memory 1g and --max-energy, but the parts ask their engine "
        "for no GPU (no --gpus N): a part its engine gives none fails it as not measured; give "
        "--gpus N"
    ]
    # Asked for, the parts get their GPU from Slurm, and nothing is said.
    notes = []
    files, _ = render_recipe("slurm", 2, [*gated[:-3], "--gpus", "1", *gated[-3:]], {}, notes=notes)
    assert notes == [] and "#SBATCH --gres=gpu:1" in files["part.sbatch"]


def test_a_recipe_says_so_of_a_models_own_gpu_budget(tmp_path: Path) -> None:
    from edgeprof.cli.recipe import render_recipe

    budgets = tmp_path / "b.yml"
    budgets.write_text("models:\n  m.onnx:\n    energy: 5J\n")
    run = ["--repeat", "2", "--cpus", "1", "--memory", "1g", "--budgets", str(budgets)]
    notes: list[str] = []
    render_recipe("slurm", 2, [*run, "-m", "m.onnx", "--", "python", "infer.py"], {}, notes=notes)
    assert notes == [
        f"the merge gates {budgets}'s energy, but the parts ask their engine for no GPU (no "
        "--gpus N): a part its engine gives none fails it as not measured; give --gpus N"
    ]
    notes = []  # another model's budget: not this sweep's
    render_recipe("slurm", 2, [*run, "-m", "x.onnx", "--", "python", "infer.py"], {}, notes=notes)
    assert notes == []


@pytest.mark.parametrize(
    ("value", "joules"), [("50J", 50.0), ("800mJ", 0.8), ("1.2kJ", 1200.0), ("0.5Wh", 1800.0)]
)
def test_an_energy_budget_is_read_in_its_unit(value: str, joules: float) -> None:
    from edgeprof.analysis.budgets import METRICS, parse_budget

    assert parse_budget(METRICS["energy"], value, "--max-energy") == pytest.approx(joules)


@pytest.mark.parametrize("value", ["50", 50, 0.8, " 12.5 "])
def test_an_energy_budget_without_its_unit_is_refused(value: object) -> None:
    """``--max-energy 50`` meant as 50 mJ a frame had been 50 J, as a bare latency had been
    seconds; a budget file's YAML number is the same slip."""
    from edgeprof.analysis.budgets import METRICS, parse_budget
    from edgeprof.errors import ConfigError

    with pytest.raises(ConfigError, match=r"^--max-energy: .* has no unit \(it would be"):
        parse_budget(METRICS["energy"], value, "--max-energy")
