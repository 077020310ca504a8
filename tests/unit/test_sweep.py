"""Sweeps: limit lists, the interleaved order, warm-ups, sweep.json, progress callbacks."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from edgeprof.analysis.cells import cell_order
from edgeprof.cli import main
from edgeprof.errors import ConfigError, LimitError
from edgeprof.model import Limits, RunResult, RunSpec
from edgeprof.resultfiles import SWEEP_SCHEMA, load_runs, sweep_stopped
from edgeprof.sweeps.labels import limit_settings, model_labels
from edgeprof.sweeps.outdir import run_dir
from edgeprof.sweeps.plan import Step, SweepPlan
from edgeprof.sweeps.sweep import _Checkpoint, run_sweep
from tests.fakes import FakeBackend, FakeRun, linear


def test_limit_lists_are_the_product_in_the_order_given() -> None:
    got = limit_settings(["2,1"], ["0", "0-1"], ["1g", "512m"])
    assert [lim.describe() for lim in got] == [
        "cpus=2, cpuset=0, memory=1.0GiB",
        "cpus=2, cpuset=0, memory=512.0MiB",
        "cpus=2, cpuset=0-1, memory=1.0GiB",
        "cpus=2, cpuset=0-1, memory=512.0MiB",
        "cpus=1, cpuset=0, memory=1.0GiB",
        "cpus=1, cpuset=0, memory=512.0MiB",
        "cpus=1, cpuset=0-1, memory=1.0GiB",
        "cpus=1, cpuset=0-1, memory=512.0MiB",
    ]
    # Repeating the option is the same as a comma list; a cpuset keeps its own commas.
    assert limit_settings(["1", "2"]) == limit_settings(["1,2"])
    assert limit_settings(cpuset=["0,1"]) == (Limits(cpuset=(0, 1)),)
    assert limit_settings() == (Limits(),)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"cpus": ["1,,2"]}, "--cpus '1,,2': empty value"),
        ({"memory": ["1g,"]}, "--memory '1g,': empty value"),
        ({"cpus": ["1,-2"]}, "^--cpus: invalid CPU count '-2'"),
        ({"cpus": ["0"]}, "^--cpus: invalid CPU count '0': must be from 0.01 to 65536$"),
        ({"cpuset": ["1-0"]}, "^--cpuset: invalid CPU list '1-0': range 1-0 is reversed$"),
        ({"memory": ["abc"]}, "invalid size 'abc'"),
        ({"cpuset": [""]}, "--cpuset: empty CPU list"),
        ({"cpus": ["1,1"]}, "'cpus=1' is listed twice"),
    ],
)
def test_bad_limit_lists(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        SweepPlan(("true",), limits=limit_settings(**kwargs))


def test_steps_interleave_models_round_by_round() -> None:
    plan = SweepPlan(
        ("infer",), models=("a", "dir/b.onnx"), limits=limit_settings(["1,2"]), repeat=2, warmup=1
    )
    steps = plan.steps()
    assert [(s.warmup, s.round, s.limits.cpus, s.label) for s in steps] == [
        (True, 1, 1.0, "a"),
        (True, 1, 1.0, "b.onnx"),
        (True, 1, 2.0, "a"),
        (True, 1, 2.0, "b.onnx"),
        (False, 1, 1.0, "a"),
        (False, 1, 1.0, "b.onnx"),
        (False, 1, 2.0, "a"),
        (False, 1, 2.0, "b.onnx"),
        (False, 2, 1.0, "a"),
        (False, 2, 1.0, "b.onnx"),
        (False, 2, 2.0, "a"),
        (False, 2, 2.0, "b.onnx"),
    ]
    assert [s.index for s in steps] == list(range(1, 13)) and {s.total for s in steps} == {12}
    assert steps[1].model == "dir/b.onnx"
    out = Path("/o")
    assert run_dir(out, plan, steps[1]) == out / "b.onnx" / "cpus=1" / "warmup-1"
    assert run_dir(out, plan, steps[-1]) == out / "b.onnx" / "cpus=2" / "2"
    single = SweepPlan(("x",))
    assert single.is_single and run_dir(out, single, single.steps()[0]) == out


@pytest.mark.parametrize(
    "kwargs, message",
    [({"repeat": 0}, "--repeat 0"), ({"warmup": -1}, "--warmup -1"), ({"limits": ()}, "at least")],
)
def test_bad_plans(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SweepPlan(("true",), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("models", "labels"),
    [
        (("a", "dir/b.onnx"), ["a", "b.onnx"]),
        (("fp32/model.onnx", "int8/model.onnx"), ["fp32/model.onnx", "int8/model.onnx"]),
        (("x/fp32/m", "y/fp32/m", "int8/m"), ["x/fp32/m", "y/fp32/m", "int8/m"]),
        (("/abs/m", "m"), ["abs/m", "m"]),
        (("/x/m", "x/m"), ["/x/m", "x/m"]),  # the whole path, its root once
    ],
)
def test_models_sharing_a_file_name_keep_their_own_labels(
    models: tuple[str, ...], labels: list[str]
) -> None:
    """One file name made two models one model's repeats, each run's files over the last's."""
    assert model_labels(models) == labels
    plan = SweepPlan(("infer",), models=models)
    assert [s.label for s in plan.steps()] == labels
    dirs = {run_dir(Path("/o"), plan, s) for s in plan.steps()}
    assert len(dirs) == len(models)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"models": ("a", "b"), "name": "x"}, "--name x with 2 models"),
        ({"models": ("a", "b", "a")}, "the model 'a' is listed twice"),
        ({"models": ("d/m", "e/m", "d_m")}, "would share the run directory 'd_m'"),
    ],
)
def test_models_that_would_share_a_label_are_refused(
    kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        SweepPlan(("true",), **kwargs)  # type: ignore[arg-type]


def test_two_models_of_one_file_name_run_and_report_apart(tmp_path: Path) -> None:
    out = tmp_path / "out"
    argv = ["run", "--backend", "fake", "--interval", "0.01", "-m", "a/m.onnx,b/m.onnx"]
    assert main([*argv, "--out", str(out), "--", "true"]) == 0
    runs = load_runs([out])
    assert sorted((r.name, r.command[-1]) for r in runs) == [
        ("a/m.onnx", "a/m.onnx"), ("b/m.onnx", "b/m.onnx"),
    ]  # fmt: skip
    assert (out / "a_m.onnx" / "1" / "result.json").is_file()
    assert (out / "b_m.onnx" / "1" / "result.json").is_file()


def test_sweep_runs_every_cell_and_saves_sweep_json(tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    be = FakeBackend(linear(cpu_pct=50, memory_bytes=10 << 20, peak_bytes=12 << 20))
    plan = SweepPlan(
        ("sh", "-c", f'printf "%s\\n" "$1" >> {seen}', "sh"),
        models=("m1", "m2"),
        limits=limit_settings(["1,2"]),
        repeat=3,
        warmup=1,
    )
    events: list[tuple[str, int]] = []

    def on_start(step: Step) -> None:
        events.append(("start", step.index))

    def on_result(step: Step, r: RunResult) -> None:
        events.append(("done", step.index))
        assert r.label == step.label and r.limits.cpus == step.limits.cpus

    sweep = run_sweep(
        plan,
        backend=be,
        out=tmp_path / "out",
        on_start=on_start,
        on_result=on_result,
        profile_options={"interval": 0.01},
    )
    assert events == [(e, i) for i in range(1, 17) for e in ("start", "done")]
    assert seen.read_text().split() == ["m1", "m2"] * 8
    assert len(sweep.warmups) == 4 and len(sweep.runs) == 12 and not sweep.interrupted
    data = json.loads((tmp_path / "out" / "sweep.json").read_text())
    assert data["schema"] == SWEEP_SCHEMA and data["repeat"] == 3 and data["warmup"] == 1
    assert data["stopped"] is None and sweep_stopped(tmp_path / "out") is None
    assert [(c["label"], c["limits"], c["runs"]) for c in data["cells"]] == [
        ("m1", "cpus=1", 3),
        ("m2", "cpus=1", 3),
        ("m1", "cpus=2", 3),
        ("m2", "cpus=2", 3),
    ]
    assert data["cells"][0]["stats"]["peak_bytes"]["median"] == 12 << 20
    assert len(data["warmup_runs"]) == 4
    assert data["argv"] == sys.argv  # the command line that made it (pytest's, here)
    assert list(data).index("argv") < list(data).index("runs")
    # Other tools read the sweep through load_runs: the measured runs, warm-ups left out.
    runs = load_runs([tmp_path / "out"])
    assert [r.label for r in runs] == ["m1", "m2"] * 6
    assert [r.label for r in cell_order(runs)][:6] == ["m1", "m1", "m1", "m2", "m2", "m2"]
    base = tmp_path / "out"
    files = sorted(p.relative_to(base).as_posix() for p in base.rglob("result.json"))
    assert len(files) == 16 and "m2/cpus=2/warmup-1/result.json" in files
    assert "m1/cpus=1/3/result.json" in files


def test_a_setting_the_host_lacks_fails_before_any_run(tmp_path: Path) -> None:
    be = FakeBackend(cpus=(0, 1))
    plan = SweepPlan(("true",), limits=limit_settings(["1,4"]))
    with pytest.raises(LimitError, match="--cpus 4 exceeds"):
        run_sweep(plan, backend=be, out=tmp_path / "out")
    assert be.runs == [] and not (tmp_path / "out").exists()


def test_cli_sweep(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    code = main(
        [
            "run", "--backend", "fake", "--interval", "0.01",
            "--cpus", "1,2", "--repeat", "2", "--warmup", "1", "-m", "a,b",
            "--out", str(out), "--", "true",
        ]
    )  # fmt: skip
    assert code == 0
    captured = capfd.readouterr()
    assert "Ranking by CPU time under cpus=1 " in captured.out
    assert "Ranking by CPU time under cpus=2 " in captured.out
    lines = captured.err.splitlines()
    assert len(lines) == 13 and lines[0].startswith("edgeprof: [1/12] a [cpus=1] warm-up 1:")
    assert lines[-2].startswith("edgeprof: [12/12] b [cpus=2] run 2:")
    assert lines[-1] == (
        f"edgeprof: wrote {out}/ (sweep.json, runs.csv, cells.csv, report.md and the runs' "
        "directories)"
    )
    assert len(load_runs([out])) == 8


@pytest.mark.parametrize(
    "args, message",
    [
        (["--cpus", "1,x"], "error: --cpus: invalid CPU count 'x'"),
        (["--cpus", "0"], "error: --cpus: invalid CPU count '0': must be from 0.01 to 65536\n"),
        (["--cpus", "1,8"], "--cpus 8 exceeds"),
        (["--memory", "1g,abc"], "invalid size 'abc'"),
        (["--warmup", "-1"], "--warmup -1"),
    ],
)
def test_cli_bad_sweeps_start_nothing(
    args: list[str], message: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["run", "--backend", "fake", *args, "--out", str(out), "--", "true"]) == 2
    err = capfd.readouterr().err
    assert err.startswith("edgeprof: error:") and message in err and err.count("\n") == 1
    assert not out.exists()


def test_sweep_json_is_a_checkpoint_written_at_a_bounded_rate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sweep.json`` holds every run, so rewriting it after each one made a sweep quadratic.
    It is written after the first run (an early interruption keeps a file), then at most once
    per ``MIN_GAP_S`` of the sweep's own time, and after the last run with every run in it.
    The bound on writes is derived from the sweep's measured duration."""
    import time

    from edgeprof import storage
    from edgeprof.sweeps import sweep as sweep_module

    written: list[int] = []
    real_write = storage.write_text_atomic

    def counting_write(path: Path, pieces: Iterable[bytes]) -> None:
        text = b"".join(pieces)
        written.append(len(json.loads(text)["runs"]))
        real_write(path, [text])

    monkeypatch.setattr(sweep_module, "write_text_atomic", counting_write)
    plan = SweepPlan(("true",), repeat=40)
    start = time.monotonic()
    result = run_sweep(plan, backend=FakeBackend(linear()), out=tmp_path / "out")
    took = time.monotonic() - start
    gap = sweep_module._Checkpoint.MIN_GAP_S
    assert written[0] == 1 and written[-1] == 40
    assert len(written) <= 2 + took / gap, (written, took)
    text = (tmp_path / "out" / "sweep.json").read_text()
    data = json.loads(text)
    assert len(data["runs"]) == 40 and data["cells"][0]["runs"] == 40
    # The runs come from the checkpoint's spool, encoded one by one as they finished; the
    # file is what encoding the whole sweep at once gives, to the byte.
    assert text == json.dumps(result.to_dict(base=tmp_path / "out"), indent=2) + "\n"


def test_a_sweep_that_fails_midway_leaves_sweep_json_with_every_finished_run(
    tmp_path: Path,
) -> None:
    """The backend fails on the fourth launch (an edgeprof error, not a result): the sweep
    raises it, and ``sweep.json`` still holds the three runs that finished, though the
    checkpoint had written only the first."""
    from edgeprof.errors import BackendError

    class FailsOnFourth(FakeBackend):
        def launch(self, spec: RunSpec) -> FakeRun:
            if len(self.runs) == 3:
                raise BackendError("the fourth launch fails")
            return super().launch(spec)

    with pytest.raises(BackendError, match="fourth launch"):
        run_sweep(SweepPlan(("true",), repeat=6), backend=FailsOnFourth(linear()), out=tmp_path)
    data = json.loads((tmp_path / "sweep.json").read_text())
    assert len(data["runs"]) == 3
    # It had said nothing of stopping (interrupted: false, repeat 6, 3 runs).
    assert data["stopped"] == "error: the fourth launch fails" and not data["interrupted"]
    assert sweep_stopped(tmp_path) == (
        f"{tmp_path / 'sweep.json'}: the sweep stopped after 3 run(s), before its plan was "
        "done (error: the fourth launch fails)"
    )
    # Every report of it says so, not only the terminal: report.md, --markdown and --html.
    files = tmp_path / "files"
    argv = ["report", str(tmp_path), "--out", str(files), "--markdown", str(tmp_path / "r.md")]
    assert main([*argv, "--html", str(tmp_path / "r.html")]) == 0
    note = "the sweep stopped after 3 run(s), before its plan was done (error: the fourth launch"
    for written in (files / "report.md", tmp_path / "r.md", tmp_path / "r.html"):
        assert note in written.read_text(), written
    copy = json.loads((files / "sweep.json").read_text())  # the sweep's own keys kept
    assert (copy["repeat"], copy["stopped"]) == (6, "error: the fourth launch fails")


def test_sweep_json_written_during_the_sweep_says_it_is_unfinished(tmp_path: Path) -> None:
    """What a SIGKILL leaves is the last checkpoint: it had read as a finished sweep."""
    seen: list[object] = []

    def peek(step: Step, r: RunResult) -> None:
        path = tmp_path / "sweep.json"
        if path.exists():
            seen.append(json.loads(path.read_text())["stopped"])

    plan = SweepPlan(("true",), repeat=3)
    run_sweep(plan, backend=FakeBackend(linear()), out=tmp_path, on_result=peek)
    assert seen and set(seen) == {_Checkpoint.UNFINISHED}
    assert json.loads((tmp_path / "sweep.json").read_text())["stopped"] is None
    assert sweep_stopped(tmp_path) is None


def test_a_sweep_that_fails_after_its_warmup_says_it_stopped(tmp_path: Path) -> None:
    """The warm-up's checkpoint had written sweep.json; a failure before the first measured
    run left it saying nothing of the stop."""
    from edgeprof.errors import LaunchError

    class FailsOnSecond(FakeBackend):
        def launch(self, spec: RunSpec) -> FakeRun:
            if len(self.runs) == 1:
                raise LaunchError("the second launch fails")
            return super().launch(spec)

    plan = SweepPlan(("true",), repeat=2, warmup=1)
    with pytest.raises(LaunchError):
        run_sweep(plan, backend=FailsOnSecond(linear()), out=tmp_path)
    data = json.loads((tmp_path / "sweep.json").read_text())
    assert data["runs"] == [] and len(data["warmup_runs"]) == 1
    assert data["stopped"] == "error: the second launch fails"


def test_a_sweep_whose_first_run_cannot_start_leaves_no_directory(tmp_path: Path) -> None:
    from edgeprof.errors import LaunchError

    class NeverStarts(FakeBackend):
        def launch(self, spec: RunSpec) -> FakeRun:
            raise LaunchError("cannot start")

    out = tmp_path / "a" / "b"
    with pytest.raises(LaunchError):
        run_sweep(SweepPlan(("true",), repeat=2), backend=NeverStarts(linear()), out=out)
    assert list(tmp_path.iterdir()) == []  # an empty directory had been left
    (tmp_path / "kept").mkdir()  # one that was there stays
    with pytest.raises(LaunchError):
        run_sweep(
            SweepPlan(("true",), repeat=2), backend=NeverStarts(linear()), out=tmp_path / "kept"
        )
    assert (tmp_path / "kept").is_dir()


def test_a_sweep_into_a_directory_of_other_runs_says_they_stay(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """An earlier sweep's other model, and an earlier single run, stayed beside the new
    sweep.json unsaid (report reads sweep.json only)."""
    out = tmp_path / "out"
    fake = ["run", "--backend", "fake", "--out", str(out)]
    assert main([*fake, "-m", "a,b", "--", "true"]) == 0
    capfd.readouterr()
    assert main([*fake, "-m", "a", "--", "true"]) == 0
    err = capfd.readouterr().err
    assert (
        f"edgeprof: warning: {out} holds 1 run(s) this sweep does not write (b/1/result.json): "
        "they stay, outside its sweep.json (give another --out, or remove them)"
    ) in err
    assert [r.label for r in load_runs([out])] == ["a"]  # the report is this sweep's
    assert main([*fake, "-m", "a,b", "--", "true"]) == 0  # the plan writes them all again
    assert "this sweep does not write" not in capfd.readouterr().err


def test_a_sweep_into_a_single_runs_directory_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """As a single run into a sweep's is: ``run --out . --repeat 2`` after ``run --out .``
    had exited 0 with the older run's result.json and samples.csv left beside sweep.json."""
    monkeypatch.chdir(tmp_path)
    fake = ["run", "--backend", "fake", "--out", "."]
    assert main([*fake, "--", "true"]) == 0
    before = sorted(p.name for p in tmp_path.iterdir())
    capfd.readouterr()
    assert main([*fake, "--repeat", "2", "--", "true"]) == 2
    assert capfd.readouterr().err == (
        "edgeprof: error: --out . holds a single run (result.json): give this sweep a "
        "directory of its own\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == before == ["result.json", "samples.csv"]
    with pytest.raises(ConfigError, match=r"holds a single run \(result.json\): give this sweep"):
        run_sweep(SweepPlan(("true",), repeat=2), backend=FakeBackend(), out=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_report_of_a_sweep_stopped_before_any_measured_run_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Stopped in its warm-up (Ctrl-C there, or an error as here), a sweep leaves a
    ``sweep.json`` with no run: ``report`` had said only "no runs in …"."""
    from edgeprof.errors import BackendError

    class FailsAfterWarmup(FakeBackend):
        def launch(self, spec: RunSpec) -> FakeRun:
            if self.runs:  # the warm-up ran
                raise BackendError("the first measured launch fails")
            return super().launch(spec)

    plan = SweepPlan(("true",), repeat=2, warmup=1)
    with pytest.raises(BackendError):
        run_sweep(plan, backend=FailsAfterWarmup(linear()), out=tmp_path)
    assert main(["report", str(tmp_path)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        f"edgeprof: error: {tmp_path / 'sweep.json'}: the sweep stopped after 0 run(s), before "
        "its plan was done (error: the first measured launch fails): no measured run to report"
    )


def test_each_file_names_the_samples_from_its_own_directory(tmp_path: Path) -> None:
    """``result.json`` had recorded ``s1/16/1/samples.csv`` (relative to the directory edgeprof
    ran in), and a moved copy kept it: ``samples.csv`` beside it now, ``16/1/samples.csv``
    in ``sweep.json``, and the moved sweep's runs are read with their moved files."""
    plan = SweepPlan(("true",), models=("16", "64"), repeat=2, warmup=1)
    out = tmp_path / "s1"
    run_sweep(plan, backend=FakeBackend(linear()), out=out, profile_options={"interval": 0.01})
    data = json.loads((out / "sweep.json").read_text())
    assert [r["samples"]["path"] for r in data["runs"]] == [
        "16/1/samples.csv", "64/1/samples.csv", "16/2/samples.csv", "64/2/samples.csv"
    ]  # fmt: skip
    assert [r["samples"]["path"] for r in data["warmup_runs"]] == [
        "16/warmup-1/samples.csv", "64/warmup-1/samples.csv"
    ]  # fmt: skip
    one = json.loads((out / "64" / "2" / "result.json").read_text())
    assert one["samples"]["path"] == "samples.csv"
    moved = tmp_path / "moved" / "deep" / "s1x"
    moved.parent.mkdir(parents=True)
    out.rename(moved)
    for src in (moved, moved / "64" / "2" / "result.json"):
        found = [r.samples.path for r in load_runs([src])]
        assert found[-1] == str(moved / "64" / "2" / "samples.csv")
