"""The budgets saved sweeps recorded, checked again by ``report`` and ``merge`` of several:
two parts of a sweep run with ``--shard`` had each failed its gate, and ``report part-1
part-2`` and ``merge part-1 part-2`` exited 0 with no budget checked (a CI user's)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from edgeprof.cli import main
from edgeprof.report.recorded_budgets import recorded_of
from edgeprof.resultfiles import SWEEP_SCHEMA
from edgeprof.storage import write_result

from .conftest import make_result

TIGHT = {"source": "command line", "default": {}, "models": {}, "overrides": {"cpu_time": 1e-6}}
LOOSE = {**TIGHT, "overrides": {"cpu_time": 1e6}}


def _sweep(directory: Path, budgets: dict[str, Any] | None, name: str = "m") -> Path:
    run = make_result(name=name)
    (directory / name / "1").mkdir(parents=True)
    write_result(directory / name / "1" / "result.json", run)
    doc: dict[str, Any] = {"schema": SWEEP_SCHEMA, "runs": [run.to_dict()], "cells": []}
    doc.update({"budgets": budgets} if budgets is not None else {})
    (directory / "sweep.json").write_text(json.dumps(doc))
    return directory


def test_two_sweeps_that_recorded_one_gate_are_held_to_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _sweep(tmp_path / "part-1", TIGHT), _sweep(tmp_path / "part-2", TIGHT)
    budgets, note = recorded_of([a, b])
    assert note is None and budgets.overrides == {"cpu_time": 1e-6}
    assert main(["report", str(a), str(b)]) == 3
    out = capsys.readouterr().out
    assert f"Budgets (command line, recorded in {a}/sweep.json, {b}/sweep.json): 0 of 1" in out
    # A directory holding both (a CI job's artifacts) is the same gate.
    assert main(["report", str(tmp_path)]) == 3


def test_budgets_that_differ_are_said_and_none_is_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _sweep(tmp_path / "a", TIGHT), _sweep(tmp_path / "b", LOOSE)
    budgets, note = recorded_of([a, b])
    assert not budgets
    assert note == (
        f"the sweeps recorded different budgets ({a}/sweep.json, {b}/sweep.json): none of "
        "them is checked; give the budgets to check (--budgets FILE, --max-…)"
    )
    assert main(["report", str(a), str(b)]) == 0
    assert f"note: {note}" in capsys.readouterr().out.splitlines()
    # One sweep recorded none: the other's are checked on every run, and said.
    c = _sweep(tmp_path / "c", None)
    budgets, note = recorded_of([a, c])
    assert budgets.overrides == {"cpu_time": 1e-6}
    assert note == (
        f"{c}/sweep.json recorded no budgets: those of {a}/sweep.json are checked on every run"
    )
    assert recorded_of([c]) == (type(budgets)(), None)
