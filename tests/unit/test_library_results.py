"""Saved results from Python: ``edgeprof.load`` and ``edgeprof.compare`` read them with the
code ``edgeprof report`` and ``edgeprof compare`` use, and ``RunResult.from_dict`` says what a
sweep's dict is."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import edgeprof
from edgeprof.analysis.instrumentation import HEAD, no_events
from edgeprof.cli import main
from edgeprof.errors import ConfigError
from edgeprof.model import RunResult
from edgeprof.report.results import render_plain
from tests.fakes import FakeBackend
from tests.unit.gating_helpers import run

BASE_WALLS = (1.00, 1.02, 0.98, 1.01)


def _sweep(path: Path, runs: list[RunResult]) -> Path:
    path.mkdir()
    (path / "sweep.json").write_text(
        json.dumps({"schema": "edgeprof-sweep/1", "runs": [r.to_dict() for r in runs]})
    )
    return path


def test_load_reads_what_report_reads(tmp_path: Path) -> None:
    """A notebook had to json.load a sweep.json and from_dict each of d["runs"]."""
    sweep = _sweep(tmp_path / "base", [run(wall=w) for w in BASE_WALLS])
    one = tmp_path / "one" / "result.json"
    one.parent.mkdir()
    one.write_text(json.dumps(run(wall=2.5).to_dict()))
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps([run(wall=3.0).to_dict(), run(wall=3.5).to_dict()]))

    assert [r.wall_s for r in edgeprof.load(sweep)] == list(BASE_WALLS)
    assert [r.wall_s for r in edgeprof.load(str(sweep / "sweep.json"))] == list(BASE_WALLS)
    assert [r.wall_s for r in edgeprof.load(one, listed)] == [2.5, 3.0, 3.5]
    assert [r.wall_s for r in edgeprof.load(tmp_path / "one")] == [2.5]
    assert all(isinstance(r, edgeprof.RunResult) for r in edgeprof.load(listed))


def test_load_refuses_what_report_refuses_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="give at least one result file"):
        edgeprof.load()
    with pytest.raises(ConfigError, match=r"edgeprof.load: 3 is not a path"):
        edgeprof.load(3)  # type: ignore[arg-type]
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError) as raised:
        edgeprof.load(tmp_path / "empty")
    assert str(raised.value) == (
        f"{tmp_path / 'empty'}: no result.json or sweep.json in it or in the 4 levels of "
        "directories below it"
    )


def test_load_of_no_runs_is_reports_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """load had returned [] where report exits 2 with "no runs in"."""
    empty = tmp_path / "emptylist.json"
    empty.write_text("[]")
    with pytest.raises(ConfigError) as raised:
        edgeprof.load(empty)
    assert str(raised.value) == f"no runs in {empty}"
    assert main(["report", str(empty)]) == 2
    assert capsys.readouterr().err == f"edgeprof: error: no runs in {empty}\n"


def test_compare_returns_the_verdicts_the_command_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _sweep(tmp_path / "base", [run(wall=w) for w in BASE_WALLS])
    slow = _sweep(tmp_path / "slow", [run(wall=w * 1.3) for w in BASE_WALLS])

    found = edgeprof.compare(base, slow)
    assert isinstance(found, edgeprof.Comparison) and found.threshold == 0.05
    assert found.regressed
    wall = next(c for c in found.changes if c.metric.key == "wall")
    assert wall.verdict == "regression" and abs((wall.change or 0) - 0.3) < 1e-9
    assert wall.base == BASE_WALLS

    assert main(["compare", str(base), str(slow)]) == 3
    assert str(found) == capsys.readouterr().out
    assert main(["compare", "--json", str(base), str(slow)]) == 3
    assert found.to_dict() == json.loads(capsys.readouterr().out)

    lenient = edgeprof.compare(str(base), str(slow), threshold="40%")
    assert not lenient.regressed and lenient.threshold == 0.4


def test_compare_takes_the_commands_flags_and_refuses_bad_arguments(tmp_path: Path) -> None:
    a = _sweep(tmp_path / "a", [run(cpus=1)] * 2)
    b = _sweep(tmp_path / "b", [run(cpus=0.5)] * 2)
    with pytest.raises(ConfigError, match="no model/limits cell is in both"):
        edgeprof.compare(a, b)
    assert not edgeprof.compare(a, b, ignore_limits=True).regressed
    with pytest.raises(ConfigError, match=r"threshold 0.05 is not a percentage such as '5%'"):
        edgeprof.compare(a, b, threshold=0.05)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="allow_missing 'yes' is not True or False"):
        edgeprof.compare(a, b, allow_missing="yes")  # type: ignore[arg-type]


def test_compare_picks_a_setting_as_the_commands_setting_option(tmp_path: Path) -> None:
    """``setting=`` is ``--setting``: one for both sides, a pair for each side's own."""
    one = _sweep(tmp_path / "one", [run(wall=w, cpus=1) for w in (1.0, 1.02, 0.98)])
    two = _sweep(
        tmp_path / "two",
        [run(wall=w, cpus=1) for w in (1.0, 1.01, 0.99)]
        + [run(wall=w, cpus=2) for w in (2.0, 2.02, 1.98)],
    )
    both = edgeprof.compare(one, two, setting="cpus=1")
    assert {c.setting for c in both.changes} == {"cpus=1, memory=1.0GiB"}
    assert not both.regressed and both.notes == ()
    each = edgeprof.compare(one, two, ignore_limits=True, setting=("cpus=1", "cpus=2"))
    wall = next(c for c in each.changes if c.metric.key == "wall")
    assert each.regressed and wall.change is not None and wall.change > 0.9
    # The command's checks, spelled as its keywords: not "--ignore-limits … --setting".
    with pytest.raises(ConfigError, match=r"^ignore_limits=True: m.onnx was measured under "
                       r"several limit settings .*: pick one with setting \(e.g. setting "):
        edgeprof.compare(one, two, ignore_limits=True)
    with pytest.raises(ConfigError, match=r"setting \['cpus=1'\] is not a setting"):
        edgeprof.compare(one, two, setting=["cpus=1"])  # type: ignore[arg-type]


def test_compare_takes_the_runs_profile_and_load_return(tmp_path: Path) -> None:
    """It took only paths ("… is not a path (a str or a Path)"), where predict and
    to_records take runs: a tool that had just profiled went back through the disk."""
    base = _sweep(tmp_path / "base", [run(wall=w) for w in BASE_WALLS])
    slow_runs = [run(wall=w * 1.3) for w in BASE_WALLS]
    from_disk = edgeprof.compare(base, _sweep(tmp_path / "slow", slow_runs))
    from_runs = edgeprof.compare(edgeprof.load(base), slow_runs)
    mixed = edgeprof.compare(base, tuple(slow_runs))
    assert from_runs.changes == from_disk.changes == mixed.changes
    assert from_runs.regressed and from_runs.notes == ()
    wall = next(c for c in from_runs.changes if c.metric.key == "wall")
    assert abs((wall.change or 0) - 0.3) < 1e-9 and wall.current == tuple(
        w * 1.3 for w in BASE_WALLS
    )
    one = edgeprof.compare(run(wall=1.0), run(wall=1.0))  # a RunResult each
    assert {c.verdict.value for c in one.changes} == {"not enough repeats"}
    with pytest.raises(ConfigError, match=r"^setting cpus=2: no run of the baseline runs has "
                       r"it \(its settings: cpus=1, memory=1.0GiB\)"):  # fmt: skip
        edgeprof.compare(slow_runs, base, setting="cpus=2")
    with pytest.raises(ConfigError, match=r"^edgeprof.compare: the baseline holds no run$"):
        edgeprof.compare([], slow_runs)
    with pytest.raises(ConfigError, match=r"^edgeprof.compare: current \[3\] is not a path, "
                       "a RunResult or a list of them$"):  # fmt: skip
        edgeprof.compare(base, [3])  # type: ignore[list-item]


def test_from_dict_of_a_sweep_says_where_its_runs_are(tmp_path: Path) -> None:
    """It had said "unsupported result schema_version None (this edgeprof reads 1)"."""
    sweep = _sweep(tmp_path / "s", [run()])
    data = json.loads((sweep / "sweep.json").read_text())
    with pytest.raises(ConfigError) as raised:
        RunResult.from_dict(data)
    assert str(raised.value) == (
        "this is a sweep file ('edgeprof-sweep/1'), not a result: its runs are under \"runs\" "
        '(RunResult.from_dict(d["runs"][i])); edgeprof.load(path) reads the whole file'
    )
    assert RunResult.from_dict(data["runs"][0]).wall_s == 1.0
    with pytest.raises(ConfigError, match="this is a list of 2 results, not one"):
        RunResult.from_dict([run().to_dict()] * 2)  # type: ignore[arg-type]


# -- the note of a Python workload that reported nothing --------------------------------------


def _script(tmp_path: Path, imports: bool) -> Path:
    """A script written to run with or without edgeprof, as the quick start's is."""
    script = tmp_path / "infer.py"
    guarded = "try:\n    import edgeprof\nexcept ImportError:\n    edgeprof = None\n"
    script.write_text((guarded if imports else "") + "print('done')\n")
    return script


def test_a_python_workload_that_reported_nothing_is_told_why_as_the_cli_tells_it(
    tmp_path: Path,
) -> None:
    """A notebook's run under a ``python3`` without edgeprof came back with no phases, no
    latency and no word why; the command line says it under its table."""
    out = tmp_path / "out"
    r = edgeprof.profile(["python3", str(_script(tmp_path, True))], backend=FakeBackend(),
                         out_dir=out, stdout=subprocess.DEVNULL)  # fmt: skip
    why = r.warnings[-1]
    assert why == no_events([r])
    assert why.startswith(
        "no run reported an iteration, a phase or a mark: if the workload calls edgeprof, "
        "python3 could not import it; install edgeprof into python3 (the same package"
    )
    # Not saved: report says it itself, once, from the saved run.
    saved = edgeprof.load(out)[0]
    assert saved.warnings == r.warnings[:-1]
    assert render_plain([saved]).count(f"note: {why}") == 1


def test_no_note_where_the_cli_prints_none(tmp_path: Path) -> None:
    plain = edgeprof.profile(["python3", str(_script(tmp_path, False))], backend=FakeBackend(),
                             stdout=subprocess.DEVNULL)  # fmt: skip
    other = edgeprof.profile(["sh", "-c", "true"], backend=FakeBackend())
    failed = edgeprof.profile(["python3", "-c", "import edgeprof; raise SystemExit(3)"],
                              backend=FakeBackend(), stderr=subprocess.DEVNULL)  # fmt: skip
    for r in (plain, other, failed):
        assert not any(w.startswith(HEAD) for w in r.warnings)


def test_compares_notes_name_the_keywords_it_takes() -> None:
    """A library user's compare of a model dropped on purpose was told "--allow-missing
    passes a model dropped on purpose": the keyword it takes is ``allow_missing=True``."""
    base = [run(name=n, wall=w) for n in ("kept", "gone") for w in BASE_WALLS]
    found = edgeprof.compare(base, [run(name="kept", wall=w) for w in BASE_WALLS])
    [note] = [n for n in found.notes if "only in the baseline" in n]
    assert note.endswith("(allow_missing=True passes a model dropped on purpose)"), note
    assert "--" not in note
