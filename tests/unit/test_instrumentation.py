"""Why a metric is missing: runs that reported no event, said once with its likely cause
(analysis/instrumentation.py), in budgets and under the results table; and the doctor probe
of the workload's interpreter."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from edgeprof.analysis.budget_checks import Status, check_budgets
from edgeprof.analysis.budgets import Budgets
from edgeprof.analysis.instrumentation import (
    HEAD,
    Import,
    edgeprof_import,
    is_python_interpreter,
    no_events,
    runs_python,
)
from edgeprof.cli import main
from edgeprof.layers.run import WORKER
from edgeprof.measure.doctor import diagnose, interpreter_imports_edgeprof, workload_python
from edgeprof.model import LatencyStats, Mark, PhaseStats, RunResult, Termination
from edgeprof.report.results import render_markdown, render_plain
from edgeprof.workload import instrument
from tests.unit.conftest import make_result

INSTRUMENT = instrument.__file__

LATENCY = LatencyStats(
    count=3, mean_s=0.01, p50_s=0.01, p90_s=0.01, p95_s=0.01, p99_s=0.01, max_s=0.01, per_s=None
)
PHASE = PhaseStats("load", 1, 0.1, 0.2, 0.1, 50.0, None, None, None)


def bare(*command: str, **overrides: object) -> RunResult:
    """A successful run that reported nothing."""
    return make_result(command=command, warnings=(), **overrides)


# -- no_events -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reported",
    [{"latency": LATENCY}, {"phases": (PHASE,)}, {"marks": (Mark("ready", 0.3, None, None),)}],
)
def test_any_event_in_any_run_means_nothing_to_explain(reported: dict[str, object]) -> None:
    assert no_events([bare("python3", "infer.py"), bare("python3", "infer.py", **reported)]) is None


def test_nothing_to_explain_without_runs_or_without_a_successful_one() -> None:
    assert no_events([]) is None
    failed = [
        bare("python3", "infer.py", termination=Termination.OOM, exit_code=137),
        bare("python3", "infer.py", exit_code=1),
    ]
    assert no_events(failed) is None
    assert no_events([*failed, bare("python3", "infer.py")]) is not None


def test_the_sentence_names_the_interpreter_and_how_to_install_into_it() -> None:
    why = no_events([bare("/usr/bin/python3", "infer.py", "m.onnx")] * 2)
    # No index serves edgeprof (pip install edgeprof: "No matching distribution found"):
    # this same edgeprof, installed there, or its client copied from where it really is.
    assert why == (
        "no run reported an iteration, a phase or a mark: if the workload calls edgeprof, "
        "/usr/bin/python3 could not import it; install edgeprof into /usr/bin/python3 (the "
        f"same package or wheel as this one), or copy {INSTRUMENT} beside the script and "
        "`import instrument as edgeprof`"
    )
    assert Path(INSTRUMENT).is_file() and Path(INSTRUMENT).is_absolute()
    assert "\n" not in why and len(why) - len(INSTRUMENT) < 300 and not why.endswith(".")


def test_edgeprofs_own_interpreter_is_not_said_to_fail_the_import(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every run of a script that calls no edgeprof under edgeprof's own .venv/bin/python
    # had been told that this interpreter "could not import it".
    monkeypatch.setattr(sys, "executable", "/opt/ep/bin/python")
    monkeypatch.setattr(sys, "prefix", "/opt/ep")
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    assert no_events([bare("/opt/ep/bin/python3", "plain.py")]) is None
    assert no_events([bare("/opt/other/bin/python3", "plain.py")]) is not None
    assert no_events([bare("/opt/ep/bin/python3", "plain.py", image="onnx:1")]) is not None
    assert no_events([bare("python3", "plain.py")]) is not None  # whichever PATH finds
    # Not a virtual environment: /usr/bin/python3.9 beside edgeprof's /usr/bin/python3 may
    # lack edgeprof.
    monkeypatch.setattr(sys, "executable", "/usr/bin/python3")
    monkeypatch.setattr(sys, "prefix", "/usr")
    assert no_events([bare("/usr/bin/python3.9", "plain.py")]) is not None


def test_in_a_container_the_interpreter_is_the_images() -> None:
    why = no_events([bare("python", "infer.py", image="onnx:1")])
    assert why is not None
    assert "python in the image onnx:1 could not import it" in why
    assert "; install edgeprof into python (the same package or wheel as this one)" in why


@pytest.mark.parametrize(
    "commands",
    [
        [("./infer.py",)],
        [("uv", "run", "python", "infer.py")],
        [("python3", "a.py"), ("/opt/venv/bin/python", "a.py")],  # which one is unknown
    ],
)
def test_without_one_known_interpreter_the_sentence_names_none(
    commands: list[tuple[str, ...]],
) -> None:
    why = no_events([bare(*c) for c in commands])
    assert why is not None and why.startswith(HEAD + ": the workload never wrote to edgeprof's")
    assert why.endswith(
        "that interpreter could not import it: install edgeprof into the interpreter that runs "
        f"the script (the same package or wheel as this one), or copy {INSTRUMENT} beside the "
        "script and `import instrument as edgeprof`"
    )
    assert "pip" not in why


@pytest.mark.parametrize(
    ("program", "python"),
    [("python", True), ("/usr/bin/python3.11", True), ("pypy3", True), ("sh", False),
     ("/opt/ipython", False), ("", False)],
)  # fmt: skip
def test_interpreters_are_known_by_their_file_name(program: str, python: bool) -> None:
    assert is_python_interpreter(program) is python


def test_python_commands_are_interpreters_or_scripts() -> None:
    assert runs_python(("python3", "-m", "serve"))
    assert runs_python(("./infer.py", "--n", "3"))
    assert runs_python(("uv", "run", "infer.py"))
    assert not runs_python(("sleep", "1"))
    assert not runs_python(())


# -- budgets ---------------------------------------------------------------------------------


def test_latency_budget_says_why_no_event_came() -> None:
    checks = check_budgets(
        [bare("/usr/bin/python3", "infer.py")], Budgets(overrides={"latency_p95": 0.04})
    )
    assert [c.status for c in checks] == [Status.NOT_MEASURED]
    assert checks[0].reason == no_events([bare("/usr/bin/python3", "infer.py")])
    said = checks[0].describe()
    assert said.startswith(
        "python3 (cpus=1.5, cpuset=0-1, memory=512.0MiB): latency p95 (all phases) not measured "
        "(no run reported an iteration, a phase or a mark: if the workload calls edgeprof, "
        "/usr/bin/python3 could not import it;"
    )


def test_latency_budget_of_code_that_never_names_edgeprof_gives_the_plain_reason() -> None:
    """A budget on ``python -c 'print(1)'`` had been told python "could not import it"
    (``doctor --python python`` said it does): its code never imports edgeprof, as the
    results table's note already knew."""
    budgets = Budgets(overrides={"latency_p95": 0.1})
    checks = check_budgets([bare("python", "-c", "print(1)")], budgets)
    assert [c.reason for c in checks] == ["the runs reported no per-iteration latency"]
    guarded = "try: import edgeprof\nexcept ImportError: pass"
    checks = check_budgets([bare("python", "-c", guarded)], budgets)
    assert "python could not import it" in checks[0].reason


def test_latency_budget_keeps_its_reason_when_phases_came_but_no_iteration() -> None:
    phases_only = bare("python3", "infer.py", phases=(PHASE,))
    checks = check_budgets([phases_only], Budgets(overrides={"latency_p95": 0.04}))
    assert checks[0].reason == "the runs reported no per-iteration latency"


def test_latency_budget_keeps_its_reason_when_another_cell_reported_events() -> None:
    """The same interpreter imported edgeprof for the other model: not the cause here."""
    quiet = bare("python3", "infer.py", name="a.onnx")
    timed = bare("python3", "infer.py", name="b.onnx", latency=LATENCY)
    checks = check_budgets([quiet, timed], Budgets(overrides={"latency_p95": 0.04}))
    assert [(c.label, c.reason) for c in checks] == [
        ("a.onnx", "the runs reported no per-iteration latency"),
        ("b.onnx", ""),
    ]


# -- the results table -----------------------------------------------------------------------


def test_one_note_per_report_for_a_python_workload() -> None:
    runs = [bare("python3", "infer.py", name=n) for n in ("a.onnx", "b.onnx", "a.onnx")]
    text = render_plain(runs)
    notes = [ln for ln in text.splitlines() if ln.startswith("note: ")]
    assert notes == [f"note: {no_events(runs)}"]
    assert notes[0].startswith("note: no run reported an iteration, a phase or a mark: ")
    assert "python3 could not import it" in notes[0]
    assert render_markdown(runs).count("note: no run reported") == 1


def test_no_note_for_other_commands_or_once_an_event_came() -> None:
    assert "note:" not in render_plain([bare("sleep", "1")])
    assert "note:" not in render_plain([bare("python3", "infer.py", latency=LATENCY)])
    failed = bare("python3", "infer.py", termination=Termination.TIMEOUT, exit_code=None)
    assert "note:" not in render_plain([failed])


def test_no_note_for_edgeprof_layers_worker() -> None:
    """``edgeprof layers`` ran its own worker in edgeprof's venv and was told to install
    edgeprof there: the worker times each layer itself and never imports edgeprof."""
    worker = str(WORKER)
    assert "note:" not in render_plain([bare(sys.executable, worker, "/tmp/x/spec.json")])
    # Read back from another install (another prefix, another interpreter): the same worker.
    elsewhere = "/opt/other/lib/python3.12/site-packages/edgeprof/workload/layers.py"
    assert "note:" not in render_plain([bare("/usr/bin/python3", elsewhere, "spec.json")])
    # A user's script of the same name elsewhere is still a workload that may call edgeprof.
    assert "note: no run reported" in render_plain([bare("python3", "my/layers.py")])


# -- doctor ----------------------------------------------------------------------------------


def test_the_venvs_interpreter_imports_edgeprof() -> None:
    assert interpreter_imports_edgeprof(sys.executable) is None
    finding = workload_python(sys.executable)
    assert (finding.ok, finding.detail) == (True, f"{sys.executable} imports edgeprof")


def without_site(tmp_path: Path) -> str:
    """An interpreter that cannot import edgeprof: this one without its site-packages and
    environment (``-S -E``), but with the working directory on its path as ``-c`` has it."""
    script = tmp_path / "python3"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S -E "$@"\n')
    script.chmod(0o755)
    return str(script)


def test_an_interpreter_without_edgeprof_says_why(tmp_path: Path) -> None:
    python = without_site(tmp_path)
    why = interpreter_imports_edgeprof(python)
    assert why == "ModuleNotFoundError: No module named 'edgeprof'"
    finding = workload_python(python)
    assert finding.ok is False
    assert finding.detail.startswith(f"{python} cannot import edgeprof ({why}): ")
    assert finding.fix is not None
    assert finding.fix == (
        f"install edgeprof into {python} (the same package or wheel as this one), or copy "
        f"{INSTRUMENT} beside the script and `import instrument as edgeprof`"
    )


def test_the_working_directory_does_not_lend_its_edgeprof(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From a checkout, ``-c`` would import ./edgeprof where the workload's script cannot;
    a relative path still names the interpreter from here."""
    (tmp_path / "edgeprof").mkdir()
    (tmp_path / "edgeprof" / "__init__.py").write_text("")
    without_site(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert interpreter_imports_edgeprof("./python3") == (
        "ModuleNotFoundError: No module named 'edgeprof'"
    )


def test_a_missing_or_unrunnable_interpreter(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-python")
    assert interpreter_imports_edgeprof(missing) == "not found"
    plain = tmp_path / "python"
    plain.write_text("")
    assert interpreter_imports_edgeprof(str(plain)) == "not executable"
    finding = workload_python(missing)
    assert (finding.ok, finding.detail) == (False, f"{missing}: not found")
    assert finding.fix is not None and "pip" not in finding.fix
    # A program that runs and exits 0 is no interpreter that imported edgeprof: /bin/true
    # and /bin/echo had been "[ok] … imports edgeprof" (a CI user's pre-flight check).
    for program in ("true", "echo"):
        found = shutil.which(program)
        assert found is not None
        finding = workload_python(found)
        assert (finding.ok, finding.detail) == (False, f"{found}: not a Python interpreter")
    assert interpreter_imports_edgeprof(sys.executable) is None


def test_doctor_checks_the_interpreter_only_when_asked(tmp_path: Path) -> None:
    python = without_site(tmp_path)
    asked = [f for f in diagnose(python=python) if f.topic == "workload python"]
    assert [f.ok for f in asked] == [False]
    assert not [f for f in diagnose() if f.topic == "workload python"]


def test_no_note_when_the_script_here_never_names_edgeprof(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An env.template's plain script (``python3 infer.py MODEL``, no edgeprof in it) was told
    at every run that python3 "could not import" edgeprof."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "infer.py").write_text("import sys\nprint(sys.argv)\n")
    plain = [bare("python3", "infer.py", "small.bin")]
    assert "note:" not in render_plain(plain)
    # A module it imports that reports (the copied instrument.py, or an import of edgeprof):
    # the script may have tried, and the note stands.
    (tmp_path / "helpers.py").write_text("from edgeprof import iteration\n")
    (tmp_path / "infer.py").write_text("import helpers\n")
    assert "note: no run reported" in render_plain(plain)
    (tmp_path / "helpers.py").unlink()
    guarded = "try:\n    import instrument as edgeprof\nexcept ImportError:\n    pass\n"
    (tmp_path / "infer.py").write_text(guarded)
    assert "note: no run reported" in render_plain(plain)
    # Not here (a script only in an image): nothing tells, the note stands.
    assert "note: no run reported" in render_plain([bare("python3", "/app/other.py")])


def test_a_script_is_read_from_the_directory_its_run_started_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An env.template with ``DIR=app``, ``SCRIPT=m.py`` runs ``python3 m.py a`` in ``app``;
    its plain script was read from the directory edgeprof (or ``report``) was started in,
    found missing there, and every run got the "could not import" note.  The run records
    where it started (``workdir``), and its relative script is read from there."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "m.py").write_text("import sys\nprint(sys.argv)\n")
    monkeypatch.chdir(tmp_path)
    started_in_app = bare("python3", "m.py", "a", workdir=str(app))
    assert "note:" not in render_plain([started_in_app])
    # Back through the result's JSON: the reader finds the same directory.
    assert RunResult.from_dict(started_in_app.to_dict()).workdir == str(app)
    # An older file (no workdir) and a directory this host lacks: the reader's own, where
    # m.py is not, and the note stands.
    assert "note: no run reported" in render_plain([bare("python3", "m.py", "a")])
    gone = bare("python3", "m.py", "a", workdir=str(tmp_path / "gone"))
    assert "note: no run reported" in render_plain([gone])


def test_a_run_records_the_directory_it_started_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``workdir``: the run's ``--cwd``-style directory made absolute, else edgeprof's own."""
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--backend", "fake", "--out", "o", "--", "python3", "-c", "pass"]) == 0
    assert json.loads((tmp_path / "o" / "result.json").read_text())["workdir"] == str(tmp_path)


def test_no_note_for_a_script_that_only_names_edgeprof_or_sits_beside_one_that_imports_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``examples/memory/read_and_hold.py`` (standard library only; its docstring says "the
    workload edgeprof measures") got the note at every run: the word was searched for, in it
    and in every ``.py`` beside it, imported or not."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hold.py").write_text(
        '"""python3 hold.py FILE   # the workload edgeprof measures"""\n'
        "import os  # see edgeprof's docs; instrument nothing\nprint(os.getpid())\n"
    )
    (tmp_path / "other.py").write_text("import edgeprof\n")  # beside it, never imported
    runs = [bare("python3", "hold.py", "x.bin")]
    assert edgeprof_import(runs[0].command, tmp_path) is Import.NEVER
    assert "note:" not in render_plain(runs)
    # A dynamic import of it does count: the note stands.
    (tmp_path / "hold.py").write_text("import importlib\nimportlib.import_module('edgeprof')\n")
    assert edgeprof_import(runs[0].command, tmp_path) is Import.MAYBE
    assert "note: no run reported" in render_plain(runs)


def test_no_note_where_the_workload_imported_edgeprof(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run -- python -c "import edgeprof; print('imported', edgeprof.__file__)"`` printed
    edgeprof's path, then that python "could not import it".  An import at the top of the
    entry code, outside any try, failed would have ended the run with exit 1: a run that
    exited 0 imported it."""
    monkeypatch.chdir(tmp_path)
    code = "import edgeprof; print('imported', edgeprof.__file__)"
    assert edgeprof_import(("python", "-c", code), tmp_path) is Import.DONE
    assert "note:" not in render_plain([bare("python", "-c", code)])
    (tmp_path / "infer.py").write_text("from edgeprof import phase\nprint('no phase')\n")
    assert edgeprof_import(("python3", "infer.py"), tmp_path) is Import.DONE
    assert "note:" not in render_plain([bare("python3", "infer.py")])
    # Guarded, or not at the top: it may have failed quietly; the note stands.
    guarded = "try:\n    import edgeprof\nexcept ImportError:\n    edgeprof = None\n"
    assert edgeprof_import(("python", "-c", guarded), tmp_path) is Import.MAYBE
    assert "note: no run reported" in render_plain([bare("python", "-c", guarded)])
    (tmp_path / "infer.py").write_text("def main():\n    import edgeprof\n")
    assert "note: no run reported" in render_plain([bare("python3", "infer.py")])


def test_no_note_when_the_code_or_module_given_never_names_edgeprof(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run -- python3 -c pass`` ended with "python3 could not import it", though the code
    it ran never names edgeprof: ``-c CODE`` and ``-m MODULE`` (a file here) follow the
    script's rule."""
    monkeypatch.chdir(tmp_path)
    for command in (
        ("python3", "-c", "pass"),
        ("python3", "-u", "-X", "dev", "-c", "import sys"),
        ("python3", "-uc", "pass"),
        ("python3", "-cpass"),
    ):
        assert "note:" not in render_plain([bare(*command)]), command
    # The code may import it, or a module here that it imports does: the note stands.
    guarded = "try: import edgeprof\nexcept ImportError: pass"
    assert "note: no run reported" in render_plain([bare("python3", "-c", guarded)])
    (tmp_path / "helpers.py").write_text("import instrument as edgeprof\n")
    assert "note: no run reported" in render_plain([bare("python3", "-c", "import helpers")])
    (tmp_path / "helpers.py").unlink()
    # -m: the module's file here decides; one not here (installed, stdlib) cannot be told.
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "infer.py").write_text("print('plain')\n")
    assert "note:" not in render_plain([bare("python3", "-m", "pkg.infer")])
    (tmp_path / "pkg" / "util.py").write_text("from edgeprof import mark\n")
    assert "note:" not in render_plain([bare("python3", "-m", "pkg.infer")])  # not imported
    (tmp_path / "pkg" / "infer.py").write_text("from . import util\n")
    assert "note: no run reported" in render_plain([bare("python3", "-m", "pkg.infer")])
    assert "note: no run reported" in render_plain([bare("python3", "-m", "http.server")])
    # A script given before -c-looking words is still the script.
    assert "note: no run reported" in render_plain([bare("python3", "/app/x.py", "-c", "pass")])


def test_a_librarys_result_says_the_sentence_once() -> None:
    """:func:`edgeprof.profile` adds the sentence to its result's warnings; ``str(result)``
    and the notebook's page then had it twice, a warning and the note under the table."""
    import edgeprof.report.display  # noqa: F401  (as `import edgeprof` does: str() the report)
    from edgeprof.sweeps.library import with_note

    guarded = "try: import edgeprof\nexcept ImportError: pass"
    r = with_note(bare("/usr/bin/python3", "-c", guarded))
    assert sum(HEAD in w for w in r.warnings) == 1
    for shown in (str(r), r._repr_html_() or ""):
        assert shown.count(HEAD) == 1, shown
    assert f"note: {HEAD}" in str(r)
