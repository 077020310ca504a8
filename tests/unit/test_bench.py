"""edgeprof bench: its input checks (nothing started on bad input) and a sweep on the scripted
backend (the worker, the phases and the per-batch-size latency)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import edgeprof
from edgeprof.analysis.device_limits import device_limits
from edgeprof.cli import main
from edgeprof.errors import ConfigError
from edgeprof.report.bench import NO_GPU_NOTE, stopped_note
from edgeprof.sweeps.bench import ON_PATH, bench, check_target, parse_batch_sizes
from tests.fakes import FakeBackend

MODEL = """
    import time

    def load(batch_size):
        return {"bs": batch_size, "calls": 0}

    def infer(state):
        state["calls"] += 1
        time.sleep(0.001 * state["bs"])

    def make(batch_size):
        return batch_size

    def infer_n(n):
        time.sleep(0.001 * n)
"""


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    (tmp_path / "tiny_model.py").write_text(textwrap.dedent(MODEL))
    return tmp_path


def test_batch_sizes() -> None:
    assert parse_batch_sizes("1,8, 32") == (1, 8, 32)
    assert parse_batch_sizes("4,4") == (4,)
    for bad in ("", "1,x", "0", "1,-2"):
        with pytest.raises(ConfigError, match="--batch-size"):
            parse_batch_sizes(bad)


def test_targets_are_checked_without_importing(model_dir: Path) -> None:
    assert check_target("tiny_model:infer", model_dir) == ("tiny_model", "infer")
    assert check_target("tiny_model.py:infer", model_dir) == ("tiny_model.py", "infer")
    with pytest.raises(ConfigError, match="expected MODULE:FUNC"):
        check_target("tiny_model", model_dir)
    with pytest.raises(ConfigError, match="not importable"):
        check_target("no_such_module_here:infer", model_dir)
    with pytest.raises(ConfigError, match="no file"):
        check_target("missing.py:infer", model_dir)


def test_a_name_the_source_lacks_is_refused_before_any_run(
    model_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A misspelt FUNC had each batch size load the model and fail in the workload (exit 1,
    the message once a batch size); the source's symbol table says so first."""
    tiny = model_dir / "tiny_model.py"
    for target in ("tiny_model:nosuch", "tiny_model.py:nosuch"):
        with pytest.raises(ConfigError, match=f"{tiny} defines no inference function 'nosuch'"):
            check_target(target, model_dir)
    with pytest.raises(ConfigError, match=r"defines no loader \(--loader\) 'build'"):
        check_target("tiny_model:infer", model_dir, loader="build")
    assert check_target("tiny_model:infer_n", model_dir, loader="make")[1] == "infer_n"
    argv = ["bench", "tiny_model.py:nosuch", "--backend", "fake", "--batch-size", "1,8"]
    assert main([*argv, "--cwd", str(model_dir)]) == 2
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and "defines no inference function 'nosuch'" in err, err
    # Bound some other way (an import, a function's global), or a way the table cannot see:
    # not refused, the run says.
    other = "from tiny_model import infer as run, load\ndef setup():\n    global late\n"
    (model_dir / "other.py").write_text(other)
    assert check_target("other.py:run", model_dir) == ("other.py", "run")
    assert check_target("other.py:late", model_dir) == ("other.py", "late")
    for dynamic in ("from tiny_model import *", "globals()['x'] = 1", "def __getattr__(n): ..."):
        (model_dir / "dyn.py").write_text(dynamic + "\n")
        assert check_target("dyn.py:anything", model_dir, loader="any") == ("dyn.py", "anything")
    # An installed or standard module's own source is read too (a user's misspelt function
    # of one had run every batch size to exit 1).
    import colorsys

    with pytest.raises(ConfigError, match=f"{colorsys.__file__} defines no inference function"):
        check_target("colorsys:nosuch", model_dir, loader="rgb_to_hsv")
    assert check_target("colorsys:hls_to_rgb", model_dir, loader="rgb_to_hsv")[1] == "hls_to_rgb"


@pytest.mark.parametrize(
    ("command", "args", "said"),
    [
        (
            ["bench", "tiny_model:infer"],
            ["--cpus", "1,2"],
            "--cpus 1,2: edgeprof bench takes one CPU setting: bench once per value (--cpus 1, "
            "then --cpus 2), or sweep them with edgeprof run --cpus 1,2 -- COMMAND",
        ),
        (
            ["bench", "tiny_model:infer"],
            ["--memory", "512m, 1g"],
            "--memory 512m, 1g: edgeprof bench takes one memory limit: bench once per value "
            "(--memory 512m, then --memory 1g), or sweep them with edgeprof run --memory "
            "512m,1g -- COMMAND",
        ),
        (
            ["layers", "profile", "m:build"],
            ["--cpus", "0.5,1,2"],
            "--cpus 0.5,1,2: edgeprof layers profile takes one CPU setting: profile once per "
            "value (--cpus 0.5, then --cpus 1)",
        ),
    ],
)
def test_a_list_of_settings_says_the_command_takes_one(
    model_dir: Path,
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    command: list[str],
    args: list[str],
    said: str,
) -> None:
    """``bench --cpus 1,2`` had said "invalid CPU count '1,2': expected a number such as 1.5"
    (a tester's), where ``run --cpus 1,2`` sweeps and ``fit`` says it takes one."""
    out = tmp_path / "o"
    argv = [*command, "--backend", "fake", *args, "--cwd", str(model_dir), "--out", str(out)]
    if command[0] == "layers":
        argv = [*command, "--backend", "fake", *args, "-o", str(out)]
    assert main(argv) == 2
    assert capfd.readouterr().err == f"edgeprof: error: {said}\n"
    assert not out.exists()


def test_bench_runs_one_profiled_run_per_batch_size(model_dir: Path) -> None:
    be = FakeBackend()
    results = bench(
        "tiny_model:infer",
        (1, 4),
        warmup=2,
        iterations=6,
        backend=be,
        cwd=model_dir,
        interval=0.01,
    )
    assert [r.label for r in results] == ["infer bs=1", "infer bs=4"]
    for r, bs in zip(results, (1, 4), strict=True):
        assert r.exit_code == 0
        assert [p.name for p in r.phases] == ["load", "warmup", "infer"]
        assert r.latency is not None and r.latency.count == 6 and r.latency.items == 6 * bs
        assert r.latency.p50_s >= 0.001 * bs
        assert r.phases[2].latency == r.latency  # the warm-up calls are not iterations
    assert len(be.runs) == 2


def test_a_file_target_imports_the_modules_beside_it(model_dir: Path) -> None:
    """As ``python pkg/m.py`` would: ``pkg/m.py``'s ``import helpers`` finds ``pkg/helpers.py``
    (it had failed with ModuleNotFoundError, the working directory being pkg's parent)."""
    pkg = model_dir / "pkg"
    pkg.mkdir()
    (pkg / "helpers.py").write_text("def load(bs):\n    return bs\n")
    (pkg / "m.py").write_text("from helpers import load\n\ndef infer(bs):\n    pass\n")
    (r,) = bench(
        "pkg/m.py:infer", (2,), warmup=0, iterations=1, backend=FakeBackend(), cwd=model_dir,
        interval=0.01,
    )
    assert r.exit_code == 0 and r.latency is not None and r.latency.items == 2
    # --warmup 0: no warm-up phase (an empty one had been reported, 6 µs at 92 % CPU)
    assert [p.name for p in r.phases] == ["load", "infer"]


def test_bench_cli_json_and_errors(
    model_dir: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(model_dir)
    rc = main(
        [
            "bench",
            "tiny_model.py:infer_n",
            "--loader",
            "make",
            "--batch-size",
            "2",
            "--iterations",
            "3",
            "--warmup",
            "0",
            "--backend",
            "fake",
            "--json",
        ]
    )
    out = capfd.readouterr().out
    assert rc == 0
    (d,) = json.loads(out)
    assert d["name"] == "infer_n bs=2" and d["latency"]["count"] == 3
    assert d["latency"]["items"] == 6
    # Bad input: one line, exit 2, nothing run.
    assert main(["bench", "tiny_model:infer", "--batch-size", "0", "--backend", "fake"]) == 2
    assert "--batch-size" in capfd.readouterr().err
    assert main(["bench", "tiny_model:infer", "--backend", "docker"]) == 2
    assert "on this host" in capfd.readouterr().err


def test_bench_name_labels_its_runs_as_run_name_does(
    model_dir: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bench had no ``--name`` (a tester's fp32 and int8 loaders could not be labelled
    alike for compare): NAME takes FUNC's place in the label, checked as run's."""
    monkeypatch.chdir(model_dir)
    argv = ["bench", "tiny_model.py:infer_n", "--loader", "make", "--batch-size", "2",
            "--iterations", "3", "--warmup", "0", "--backend", "fake", "--json"]  # fmt: skip
    assert main([*argv, "--name", "net"]) == 0
    (d,) = json.loads(capfd.readouterr().out)
    assert d["name"] == "net bs=2" and d["target"] == "tiny_model.py:infer_n, loader make"
    assert main([*argv, "--name", "a;b"]) == 2
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and "--name 'a;b': contains ';'" in err, err


def test_a_missing_function_is_a_failed_run_not_a_crash(model_dir: Path) -> None:
    """Where the source may bind names its symbol table does not show (here globals()), the
    check lets it through and the workload says so."""
    source = (model_dir / "tiny_model.py").read_text()
    (model_dir / "dyn_model.py").write_text(source + "\nglobals()\n")
    (r,) = bench("dyn_model:nope", (1,), backend=FakeBackend(), cwd=model_dir)
    assert r.exit_code not in (0, None)
    assert [p.name for p in r.phases] == ["load"] and r.phases[0].complete


def test_bench_with_a_device(
    model_dir: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(model_dir)
    monkeypatch.delenv("EDGEPROF_DEVICES", raising=False)
    cat = model_dir / "devices.yml"
    cat.write_text("devices:\n  tiny:\n    cores: 2\n    memory: 96m\n    share: 1.5\n")
    rc = main(["bench", "tiny_model.py:infer_n", "--loader", "make", "--iterations", "2",
               "--warmup", "0", "--backend", "fake", "--json", "--device", "tiny",
               "--devices", str(cat)])  # fmt: skip
    out = capfd.readouterr().out
    assert rc == 0
    (d,) = json.loads(out)
    assert (d["device"], d["limits"]["cpus"]) == ("tiny", 1.5)
    assert d["limits"]["memory_bytes"] == 96 << 20
    assert main(["bench", "tiny_model:infer", "--backend", "fake", "--device", "nope"]) == 2
    assert "--device nope: no such device" in capfd.readouterr().err


def test_bench_takes_the_storage_and_process_limits(
    model_dir: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """bench's load phase reads the model from storage: a card's speed and requests a
    second apply to it as to a run's, and so does a process limit, beside a device's."""
    monkeypatch.chdir(model_dir)
    monkeypatch.delenv("EDGEPROF_DEVICES", raising=False)
    cat = model_dir / "devices.yml"
    cat.write_text("devices:\n  card:\n    cores: 2\n    memory: 96m\n    read_iops: 1500\n")
    base = ["bench", "tiny_model.py:infer_n", "--loader", "make", "--iterations", "2",
            "--warmup", "0", "--backend", "fake", "--json"]  # fmt: skip
    rc = main([*base, "--device", "card", "--devices", str(cat), "--pids", "16",
               "--read-bps", "10m", "--write-iops", "500"])  # fmt: skip
    out, err = capfd.readouterr()
    assert rc == 0, err
    (d,) = json.loads(out)
    lim = d["limits"]
    assert (lim["pids"], lim["read_bps"], lim["read_iops"], lim["write_iops"]) == (
        16, 10 << 20, 1500, 500)  # fmt: skip
    assert lim["write_bps"] is None
    rc = main([*base, "--device", "card", "--devices", str(cat), "--read-iops", "4000"])
    out, err = capfd.readouterr()
    assert rc == 0 and json.loads(out)[0]["limits"]["read_iops"] == 4000
    assert "--read-iops 4000 IOPS replaces card's 1500 IOPS" in err
    for bad, said in ((["--read-iops", "0"], "--read-iops: invalid read IOPS limit '0'"),
                      (["--pids", "0"], "--pids: invalid process limit '0'"),
                      (["--write-bps", "8"], "--write-bps: invalid write rate '8'")):  # fmt: skip
        assert main([*base, *bad]) == 2
        assert said in capfd.readouterr().err


def test_bench_table_has_mlmodelcis_indicators_per_batch_size(
    model_dir: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Throughput, p50/p95/p99, GPU memory and utilisation per batch size (MLModelCI's
    table), with the GPU's figures from NVML (the double here: the scripted backend cannot
    list pids, so the memory is the device's rise); where no run saw a GPU, its columns are
    left out and a note says so (three columns of "no GPU" had been most of the table)."""
    from edgeprof.backends import nvml
    from tests.nvml_double import FakeGpu, MiB, NvmlDouble

    monkeypatch.chdir(model_dir)
    argv = ["bench", "tiny_model:infer", "--batch-size", "1,4", "--iterations", "3",
            "--warmup", "0", "--backend", "fake"]  # fmt: skip
    assert main(argv) == 0
    out, err = capfd.readouterr()
    lines = out[out.index("Per batch size") :].splitlines()
    assert lines[1].split() == ["NAME", "ITEMS/S", "P50", "P95", "P99"]
    assert [line.split()[:2] for line in lines[3:5]] == [["infer", "bs=1"], ["infer", "bs=4"]]
    assert all(len(line.split()) == 6 for line in lines[3:5])
    # No "(--gpus)": none was given; what the user can do instead (a tester's).
    assert NO_GPU_NOTE in lines and NO_GPU_NOTE == (
        "no GPU was measured (edgeprof doctor lists the GPUs it can read): no GPU MEMORY, "
        "GPU UTIL or ENERGY/ITEM columns"
    )
    # Each run's end on stderr as it ends (a bench had been silent until its tables).
    said = [ln for ln in err.splitlines() if ln.startswith("edgeprof bench: ")]
    assert [ln.split(": ")[1] for ln in said] == ["infer bs=1 (1 of 2)", "infer bs=4 (2 of 2)"]
    assert all(ln.split(": ")[2].startswith("exited, ") for ln in said)

    gpu = FakeGpu("GPU-a", util=55)

    def busy(g: FakeGpu) -> None:
        g.used += 64 * MiB
        g.energy_mj += 1000

    lib = NvmlDouble([gpu])
    lib.on_read = busy
    monkeypatch.setattr(nvml, "load", lambda *a, **k: lib)
    assert main(argv) == 0
    out = capfd.readouterr().out
    rows = out[out.index("Per batch size") :].splitlines()
    assert rows[1].split()[-4:] == ["MEMORY", "GPU", "UTIL", "ENERGY/ITEM"]
    assert NO_GPU_NOTE not in rows
    for row in rows[3:5]:
        cells = row.split()
        assert cells[-3].endswith("MiB") and cells[-3] != "0B"
        assert cells[-2] == "55.0%" and cells[-1].endswith("J")


def test_gpu_memory_is_a_budget_as_in_run(
    model_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """``--gpu-memory`` had only printed its verdict: a bench over it, or with no GPU
    measured, exited 0 where run exits 3."""
    fake = ["--backend", "fake", "--iterations", "2", "--warmup", "0", "--cwd", str(model_dir)]
    argv = ["bench", "tiny_model:infer", *fake, "--gpu-memory", "2g"]
    assert main(argv) == 3
    out = capfd.readouterr().out
    assert "Budgets (command line): 0 of 1 checks passed" in out
    assert "GPU memory not measured (no GPU was measured" in out
    assert main([*argv, "--json"]) == 3
    assert json.loads(capfd.readouterr().out)[0]["gpu"] is None
    assert main([*argv[:-1], "lots"]) == 2
    assert "edgeprof: error: --gpu-memory: invalid size 'lots'" in capfd.readouterr().err


def test_a_devices_gpu_memory_and_unified_memory_reach_the_runs(
    model_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """As in run: a device's ``gpu_memory`` is the runs' (not a budget), a unified one holds
    host and GPU to its memory, and refuses --gpu-memory."""
    cat = model_dir / "devices.yml"
    cat.write_text(
        "devices:\n"
        "  board:\n    cores: 1\n    memory: 96m\n    gpu_memory: 64m\n"
        "  nano:\n    cores: 1\n    memory: 96m\n    unified_memory: true\n"
    )
    board = device_limits("board", cat)
    assert (board.gpu_memory, board.unified_memory) == (f"{64 << 20}b", False)
    nano = device_limits("nano", cat)
    assert (nano.gpu_memory, nano.unified_memory) == (None, True)
    fake = ["--backend", "fake", "--iterations", "1", "--warmup", "0", "--cwd", str(model_dir)]
    argv = ["bench", "tiny_model:infer", *fake, "--devices", str(cat), "--json"]
    assert main([*argv, "--device", "board"]) == 0  # a device's GPU memory is no budget
    capfd.readouterr()
    assert main([*argv, "--device", "nano", "--gpu-memory", "1g"]) == 2
    err = capfd.readouterr().err
    assert "--gpu-memory with --device nano: its CPU and GPU share one memory" in err


def test_bench_predicts_with_a_calibration_and_with_a_devices(
    model_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """As run does: ``--calibration``, or the ``--device``'s own (its warning said it
    predicted the device's values, and no prediction was printed)."""
    fake = ["--backend", "fake", "--iterations", "2", "--warmup", "0", "--cwd", str(model_dir)]
    argv = ["bench", "tiny_model:infer", "--batch-size", "1,2,4", *fake]
    assert main([*argv, "--cpus", "1", "--out", str(model_dir / "res")]) == 0
    csv_path = model_dir / "dev.csv"
    csv_path.write_text("model,runtime_ms\ninfer bs=1,400\ninfer bs=2,500\ninfer bs=4,700\n")
    cal = model_dir / "dev.yml"
    cmd = ["calibrate", "--device", "dev", "--measurements", str(csv_path), "--out", str(cal)]
    assert main([*cmd, str(model_dir / "res")]) == 0
    capfd.readouterr()
    assert main([*argv, "--cpus", "1", "--calibration", str(cal)]) == 0
    out = capfd.readouterr().out
    assert f"Predicted on dev (calibration {cal})" in out
    rows = [ln for ln in out.splitlines() if ln.startswith("infer bs=") and "runtime" in ln]
    assert len(rows) == 3
    cat = model_dir / "devices.yml"
    cat.write_text(f"devices:\n  board:\n    cores: 1\n    memory: 1g\n    calibration: {cal}\n")
    assert main([*argv, "--devices", str(cat), "--device", "board"]) == 0
    assert f"Predicted on dev (calibration {cal})" in capfd.readouterr().out
    # --calibration is the one the device's runs get: the device's own gives way to it.
    assert device_limits("board", cat, calibration=csv_path).calibration == csv_path
    assert device_limits("board", cat).calibration == cal
    # A board whose speed its calibration sets: the predictions would count it twice.
    from edgeprof.analysis.device_limits import device_calibration
    from edgeprof.analysis.devices import CALIBRATED, Device

    dev = Device("board", 1, 1 << 30, cat, speed=CALIBRATED, calibration=cal)
    none, (why,) = device_calibration(dev, False, None)
    assert none is None and "calibration's predictions are not made" in why
    # The share the calibration implied is said (the listing had shown "from calibration").
    _, (at,) = device_calibration(dev, False, None, 0.043)
    assert at.startswith("board: the run emulates the speed its calibration implies, cpus=0.043, ")
    assert device_calibration(dev, True, None) == (cal, [])  # under the user's --cpus
    assert device_calibration(dev, False, csv_path) == (csv_path, [])  # --calibration given
    assert main([*argv, "--calibration", str(model_dir / "nope.yml")]) == 2  # before any run


def test_the_per_batch_size_table_keeps_the_latency_tables_marks() -> None:
    """A p99 that measures the quota's stalls is starred there as in the latency table, and
    to the same two decimals of the same unit (0.16 ms had read 0.2; under a millisecond, in
    µs)."""
    from edgeprof.model import LatencyStats, Throttling
    from edgeprof.report.bench import render_bench

    from .conftest import make_result

    stalled = Throttling(10, 3, 0.02, 0.0002, 0.0002, 0.0002, 0.0002, ("p99",))
    lat = LatencyStats(
        10, 0.001, 0.00016, 0.0002, 0.0003, 0.007, 0.008, 900.0,
        items=10, items_per_s=900.0, throttling=stalled,
    )
    text = render_bench([make_result(name="infer bs=1", latency=lat)])
    (row,) = [ln for ln in text.splitlines() if ln.startswith("infer bs=1")]
    # 10 iterations: p95 (20 needed) and p99 (100) are points near the maximum, marked.
    assert row.split()[2:6] == ["900.0", "160.00µs", "300.00µs^", "7.00ms^*"]
    assert text.endswith(
        "^ from fewer iterations than the percentile needs (p50: 2, p90: 10, p95: 20, "
        "p99: 100): a point near the maximum, not an estimate of that percentile\n"
        "* measures the CPU quota's stalls, not the workload (see the warnings)\n"
        f"{NO_GPU_NOTE}\n"
    )
    clean = dataclasses.replace(lat, throttling=None)
    assert "*" not in render_bench([make_result(name="infer bs=1", latency=clean)])


def test_the_first_batch_sizes_page_cache_is_said() -> None:
    """Its run read the imports' files, the later runs found them cached: its peak was the
    largest for no reason of its batch size."""
    from edgeprof.model import MemoryParts, RunResult
    from edgeprof.report.bench import first_reads_note

    from .conftest import make_result

    mib = 1 << 20

    def run(bs: int, file: int) -> RunResult:
        r = make_result(name=f"infer bs={bs}")
        parts = MemoryParts(total=None, anon=100 * mib, file=file * mib, shmem=0, kernel=mib)
        return dataclasses.replace(r, memory=dataclasses.replace(r.memory, peaks=parts))

    note = first_reads_note([run(8, 302), run(1, 4), run(32, 6)])
    assert note == (
        "infer bs=8 ran first: its peak memory counts 302.0MiB of page cache (the files it "
        "read, which the later batch sizes found cached, at most 6.0MiB): compare their "
        "anonymous memory, not their peaks"
    )
    assert first_reads_note([run(8, 20), run(1, 10)]) is None  # within 16 MiB
    assert first_reads_note([run(8, 302)]) is None  # one batch size: nothing to compare


def test_repeated_bench_runs_are_judged_by_compare(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """One run a batch size had ``compare`` answer "not enough repeats" for a function doing
    twice the work (exit 0: a tester's); with ``--repeat`` it is a latency regression (of the
    p50: a p95 of 3 iterations a run is not judged).  The
    calls sleep 1 ms and 300 ms: a loaded host lengthens the first, never to the second."""
    fast, slow = tmp_path / "fast", tmp_path / "slow"
    for where, ms in ((fast, 1), (slow, 300)):
        where.mkdir()
        body = f"def infer(bs):\n    time.sleep({ms} / 1000)\n"
        (where / "m.py").write_text("import time\ndef load(bs):\n    return bs\n" + body)
        argv = ["bench", "m:infer", "--iterations", "3", "--warmup", "0", "--repeat", "3",
                "--backend", "fake", "--cwd", str(where), "--out", str(where / "out")]
        assert main(argv) == 0
    out = capfd.readouterr().out
    rows = out[out.rindex("Per batch size") :].splitlines()[3:6]
    assert [r.split()[:4] for r in rows] == [["infer", "bs=1", "run", str(k)] for k in (1, 2, 3)]
    found = sorted(str(p.relative_to(fast / "out")) for p in (fast / "out").rglob("result.json"))
    assert found == [f"bs1/{k}/result.json" for k in (1, 2, 3)]
    assert main(["compare", str(fast / "out"), str(slow / "out")]) == 3
    out = capfd.readouterr().out
    # The p50 (3 iterations a run are enough for it): the p95 of 3 is not judged.
    rows = [line for line in out.splitlines() if line.startswith("infer bs=1 ")]
    [p50] = [line for line in rows if "latency p50" in line]
    assert p50.endswith("regression") and "(n=3)" in p50
    [p95] = [line for line in rows if "latency p95" in line]
    assert p95.endswith("not judged")
    assert main(["bench", "m:infer", "--repeat", "0", "--backend", "fake", "--cwd", str(fast)]) == 2
    assert "--repeat 0: must be at least 1" in capfd.readouterr().err
    # run's and fit's bound (docs/cli.md): 100 001 had started the sweep.
    many = ["bench", "m:infer", "--repeat", "100001", "--backend", "fake", "--cwd", str(fast)]
    assert main(many) == 2
    assert "--repeat 100001: must be at most 100000" in capfd.readouterr().err


def test_a_bench_refuses_an_out_holding_runs_it_would_not_write(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """``compare`` and ``report`` read every run under a bench's ``--out``: an earlier
    one-run ``bs1/result.json`` had been read as a fourth run of ``--repeat 3``.  A bench
    whose runs would sit beside others is refused before it runs; one that writes the same
    runs again, or more of them, is not."""
    (tmp_path / "m.py").write_text("def load(bs):\n    return bs\ndef infer(bs):\n    pass\n")
    out = tmp_path / "out"

    def bench_main(*args: str) -> int:
        base = ["bench", "m:infer", "--iterations", "2", "--warmup", "0", "--backend", "fake"]
        return main([*base, "--cwd", str(tmp_path), "--out", str(out), *args])

    def runs() -> list[str]:
        return sorted(str(p.relative_to(out)) for p in out.rglob("result.json"))

    assert bench_main() == 0
    assert bench_main() == 0  # the same run again
    assert bench_main("--batch-size", "1,8") == 0  # and one more beside it
    assert runs() == ["bs1/result.json", "bs8/result.json"]
    capfd.readouterr()
    assert bench_main("--repeat", "3") == 2
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and f"--out {out} holds 2 run(s) this bench does not write" in err
    assert "(bs1/result.json, bs8/result.json)" in err
    assert bench_main("--batch-size", "8") == 2
    assert "holds 1 run(s) this bench does not write (bs1/result.json)" in capfd.readouterr().err
    assert runs() == ["bs1/result.json", "bs8/result.json"]  # nothing ran


def test_the_worker_imports_this_edgeprof(tmp_path: Path) -> None:
    """The worker's path names the directory holding this package: with no site packages
    (``-S``: no installed edgeprof to fall back on), from another directory, the worker
    imports this very package (it had named the package's own directory, and an installed
    edgeprof was imported instead)."""
    code = ON_PATH + "import edgeprof; print(edgeprof.__file__)"
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-c", code], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == edgeprof.__file__


def test_a_stopped_bench_says_what_it_did_not_run() -> None:
    """An interrupted bench had shown the batch sizes it ran as if they were all (a tester's
    bs=4 never ran), and its cut-short run's throughput unmarked."""
    from edgeprof.model import Termination
    from edgeprof.report.bench import render_bench

    from .conftest import make_result

    done = make_result(name="infer bs=1")
    cut = make_result(name="infer bs=2", termination=Termination.INTERRUPTED, exit_code=None)
    planned = ["bs=1", "bs=1", "bs=2", "bs=2", "bs=4", "bs=4"]
    assert stopped_note([done, done, cut], planned) == (
        "note: the bench stopped after 3 of 6 runs (interrupted): bs=2, bs=4 (2 runs) not run"
    )
    assert stopped_note([done], ["bs=1"]) is None
    assert stopped_note([], ["bs=1"]) == (
        "note: the bench stopped after 0 of 1 runs (before a run): bs=1 not run"
    )
    rows = render_bench([done, cut]).splitlines()
    assert [r.split("  ")[0] for r in rows[3:5]] == ["infer bs=1", "infer bs=2 (interrupted)"]
    # Its exit code inside the same parentheses ("(interrupted (143))" had nested them).
    killed = make_result(name="infer bs=2", termination=Termination.INTERRUPTED, exit_code=143)
    assert stopped_note([done, killed], ["bs=1", "bs=2", "bs=4"]) == (
        "note: the bench stopped after 2 of 3 runs (interrupted, exit 143): bs=4 not run"
    )
    assert "infer bs=2 (interrupted, exit 143)" in render_bench([done, killed])
