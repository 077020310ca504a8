"""tests/run_tiers.py's gpu tier: the probe (:func:`gpu_absent`, run against a stand-in
``pynvml`` through the venv's interpreter, so its real probe code runs), and the summary
(:func:`summary`): a tier that did not run reads so, counts no pass, and fails the run unless
it is the gpu tier, in CI too."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.run_tiers import (
    MAY_NOT_RUN,
    TIERS,
    Row,
    chosen,
    gpu_absent,
    main,
    summary,
    unit_workers,
)

FAKE_PYNVML = """
import os
def nvmlInit():
    if os.environ.get("FAKE_NVML_INIT"):
        raise RuntimeError(os.environ["FAKE_NVML_INIT"])
def nvmlDeviceGetCount():
    return int(os.environ["FAKE_NVML_COUNT"])
def nvmlShutdown():
    pass
"""


def python_with_fake_pynvml(tmp_path: Path, count: int = 1, init_error: str = "") -> str:
    """This interpreter, with a ``pynvml`` that lists ``count`` GPUs (or fails to start)."""
    lib = tmp_path / "lib"
    lib.mkdir(exist_ok=True)
    (lib / "pynvml.py").write_text(FAKE_PYNVML)
    script = tmp_path / "python3"
    script.write_text(
        "#!/bin/sh\n"
        f"PYTHONPATH={lib} FAKE_NVML_COUNT={count} FAKE_NVML_INIT='{init_error}' "
        f'exec "{sys.executable}" "$@"\n'
    )
    script.chmod(0o755)
    return str(script)


@pytest.fixture
def no_kernel_gpus(tmp_path: Path) -> Path:
    empty = tmp_path / "gpus"
    empty.mkdir()
    return empty


def test_a_gpu_nvml_lists_runs_the_tier(tmp_path: Path, no_kernel_gpus: Path) -> None:
    assert gpu_absent(python_with_fake_pynvml(tmp_path, 2), kernel=no_kernel_gpus) is None


def test_nvml_listing_none_is_no_gpu(tmp_path: Path, no_kernel_gpus: Path) -> None:
    python = python_with_fake_pynvml(tmp_path, 0)
    assert gpu_absent(python, kernel=no_kernel_gpus) == "no NVIDIA GPU here (NVML lists none)"


def test_nvml_failing_to_start_says_why_in_one_line(tmp_path: Path, no_kernel_gpus: Path) -> None:
    python = python_with_fake_pynvml(tmp_path, init_error="Driver Not Loaded")
    assert gpu_absent(python, kernel=no_kernel_gpus) == (
        "no NVIDIA GPU here (NVML: RuntimeError: Driver Not Loaded)"
    )


def test_no_bindings_and_no_interpreter(tmp_path: Path, no_kernel_gpus: Path) -> None:
    why = gpu_absent(sys.executable, kernel=no_kernel_gpus)
    # This interpreter may have the real bindings (a GPU host): then it says nothing or "none".
    assert why is None or why.startswith("no NVIDIA GPU here (NVML")
    missing = gpu_absent(str(tmp_path / "no-python"), kernel=no_kernel_gpus)
    assert missing is not None and missing.startswith("no NVIDIA GPU here (NVML: [Errno 2]")


def test_a_gpu_the_kernel_driver_lists_runs_the_tier_without_nvml(tmp_path: Path) -> None:
    """The tier's conftest then fails in CI for what is missing: a GPU host whose venv lacks
    the bindings must not pass by not running its GPU tests."""
    kernel = tmp_path / "gpus"
    (kernel / "0000:17:00.0").mkdir(parents=True)
    python = python_with_fake_pynvml(tmp_path, init_error="NVML Shared Library Not Found")
    assert gpu_absent(python, kernel=kernel) is None


def ran(name: str, tests: int, skipped: int = 0, failures: int = 0, rc: int = 0) -> Row:
    counts = {"tests": tests, "failures": failures, "errors": 0, "skipped": skipped}
    return Row(name, counts, 1.0, rc)


WHY = "no NVIDIA GPU here (NVML: ModuleNotFoundError: No module named 'pynvml')"


@pytest.mark.parametrize("in_ci", [False, True])
def test_the_gpu_tier_not_run_reads_so_and_does_not_fail_the_run(in_ci: bool) -> None:
    lines, ok = summary([ran("unit", 10), Row("gpu", None, 0.0, 0, WHY)], in_ci=in_ci)
    assert ok
    assert f"  {'gpu':28s} did not run: {WHY}" in lines
    assert lines[-1] == "10 passed, 0 failed, 0 skipped; did not run: gpu"


def test_any_other_tier_not_run_fails_the_run() -> None:
    assert {"gpu"} == MAY_NOT_RUN
    _, ok = summary([ran("unit", 10), Row("host", None, 0.0, 0, "?")], in_ci=False)
    assert not ok


def test_the_gpu_tier_that_ran_counts_like_any_other() -> None:
    lines, ok = summary([ran("unit", 10), ran("gpu", 4)], in_ci=True)
    assert ok and lines[-1] == "14 passed, 0 failed, 0 skipped"
    _, ok = summary([ran("gpu", 4, skipped=4)], in_ci=True)
    assert not ok  # skipped in CI: a GPU host that could not run them fails
    _, ok = summary([ran("gpu", 4, skipped=4)], in_ci=False)
    assert ok
    _, ok = summary([ran("gpu", 0)], in_ci=False)
    assert not ok  # ran, but no test: nothing was checked


def test_tests_gpu_is_the_gpu_tiers_alone() -> None:
    """No other tier names tests/gpu (or a folder above it), so no GPU test runs, or
    passes, anywhere else."""
    assert dict(TIERS)["gpu"] == ["tests/gpu"]
    gpu = Path("tests/gpu")
    for name, paths in TIERS:
        if name != "gpu":
            assert not [p for p in map(Path, paths) if p == gpu or p in gpu.parents], name


def test_the_checkout_is_compiled_once_for_every_interpreter_the_tiers_start(
    tmp_path: Path,
) -> None:
    """The tiers' interpreters run with PYTHONDONTWRITEBYTECODE: each package's bytecode is
    written up front, where the import system finds it (``__pycache__``, this Python's tag),
    and a file that does not compile fails the step."""
    import importlib.util

    from tests.run_tiers import COMPILED, compile_checkout

    for name in COMPILED:
        (tmp_path / name / "sub").mkdir(parents=True)
        (tmp_path / name / "sub" / "mod.py").write_text("X = 1\n")
    assert compile_checkout(tmp_path)
    for name in COMPILED:
        cached = Path(importlib.util.cache_from_source(str(tmp_path / name / "sub" / "mod.py")))
        assert cached.is_file(), cached
    (tmp_path / COMPILED[0] / "broken.py").write_text("def (:\n")
    assert not compile_checkout(tmp_path)


def test_the_unit_tier_runs_a_worker_per_core_up_to_eight() -> None:
    assert unit_workers(1) == []  # one core: no workers to start
    assert unit_workers(2) == ["-n", "2"]
    assert unit_workers(16) == ["-n", "8"]
    assert unit_workers() == unit_workers(len(os.sched_getaffinity(0)))


def test_one_tier_or_several_by_name_in_the_runs_order() -> None:
    assert chosen([]) == ["static", "unit", "host", "gpu", "vm", "docker", "slurm", "ray"]
    assert chosen(["unit"]) == ["unit"]
    assert chosen(["unit", "static"]) == ["static", "unit"]
    with pytest.raises(ValueError, match=r"^no tier 'units': the tiers are static, unit, host"):
        chosen(["unit", "units"])


def test_a_word_that_is_no_tier_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["kernel"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "run_tiers: no tier 'kernel': the tiers are static, unit, host, gpu, vm, docker, "
        "slurm, ray\n"
    )
