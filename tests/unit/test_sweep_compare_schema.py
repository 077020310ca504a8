"""The published schemas of ``sweep.json`` (``edgeprof/sweep.schema.json``) and of ``compare
--json`` (``edgeprof/compare.schema.json``), made from the typed dicts their writers return
(:mod:`edgeprof.model.sweepdoc`, :mod:`edgeprof.model.comparedoc`) as result.json's, fit.json's
and predictions' are: neither had one.  Every sweep.json the suite writes is held to the exact
form by the autouse check of ``tests/conftest.py``; here, a real sweep, merge and comparison,
key for key."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from edgeprof.analysis.change import Verdict
from edgeprof.cli import main
from edgeprof.model.comparedoc import VERDICTS
from edgeprof.model.schema import compare_schema, sweep_schema
from tests.conftest import COMPARE_SCHEMA, SWEEP_SCHEMA, compare_schema_errors, sweep_schema_errors

RUN = ["run", "--backend", "fake", "--interval", "0.01"]


@pytest.mark.parametrize(
    ("path", "made", "which"),
    [(SWEEP_SCHEMA, sweep_schema, "sweep"), (COMPARE_SCHEMA, compare_schema, "compare")],
)
def test_the_published_schemas_are_the_models(path: Path, made: Any, which: str) -> None:
    published = json.loads(path.read_text())
    jsonschema.Draft202012Validator.check_schema(published)
    assert published == made(), (
        f"edgeprof/{path.name} is out of date: "
        f".venv/bin/python -m edgeprof.model.schema {which} > edgeprof/{path.name}"
    )
    assert published["$id"] == f"https://edgeprof.invalid/{which}/1/schema.json"
    assert "additionalProperties" not in json.dumps(published).replace(
        '"additionalProperties": {', ""
    )  # open to a newer release's keys, but for the maps' value schemas


def test_a_sweep_holds_to_it_key_for_key_with_its_runs(tmp_path: Path) -> None:
    out = tmp_path / "s"
    argv = [*RUN, "-m", "a,b", "--repeat", "2", "--warmup", "1", "--max-wall", "1h"]
    assert main([*argv, "--out", str(out), "--", "true"]) == 0
    doc = json.loads((out / "sweep.json").read_text())
    schema = sweep_schema(exact=True)
    exact = jsonschema.Draft202012Validator(schema)
    exact.validate(doc)  # the runs too, as result.json's
    written = set(doc)
    assert written == {
        "schema", "command", "models", "limits", "repeat", "warmup", "workdir", "argv",
        "interrupted", "stopped", "budgets", "warmup_runs", "runs", "cells",
    }  # fmt: skip
    assert written <= set(schema["properties"])
    assert set(doc["cells"][0]) == set(schema["$defs"]["CellDoc"]["properties"])
    assert set(doc["cells"][0]["stats"]["wall_s"]) == set(schema["$defs"]["StatDoc"]["properties"])
    assert doc["budgets"]["overrides"] == {"wall": 3600.0}
    # What edgeprof does not write is refused: a wrong type, an unknown key, no repeat,
    # another schema, a run that is no result.
    for wrong in (
        {**doc, "repeat": "twice"},
        {**doc, "shards": [{"index": 1}]},
        {**doc, "cells": [{**doc["cells"][0], "more": 1}]},
        {**doc, "repeat": 0},
        {**doc, "schema": "edgeprof-sweep/2"},
        {**doc, "runs": [{**doc["runs"][0], "wall_s": -1}]},
    ):
        assert list(exact.iter_errors(wrong)), wrong
    # The published schema is open: a newer edgeprof's key passes it.
    jsonschema.Draft202012Validator(sweep_schema()).validate({**doc, "newer": 1})


def test_a_merged_sweep_and_a_report_copy_hold_to_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in (1, 2):
        part = ["--shard", f"{i}/2", "--out", str(tmp_path / f"p{i}")]
        assert main([*RUN, "-m", "a", "--repeat", "2", *part, "--", "true"]) == 0
    parts = [str(tmp_path / "p1"), str(tmp_path / "p2")]
    assert main(["merge", *parts, "--out", str(tmp_path / "m")]) == 0
    assert main(["report", str(tmp_path / "m"), "--out", str(tmp_path / "r")]) == 0
    capsys.readouterr()
    merged = json.loads((tmp_path / "m" / "sweep.json").read_text())
    copy = json.loads((tmp_path / "r" / "sweep.json").read_text())
    part = json.loads((tmp_path / "p1" / "sweep.json").read_text())
    assert [s["index"] for s in merged["shards"]] == [1, 2]
    assert part["shard"] == {"index": 1, "count": 2, "rounds": [1]}
    assert copy["report_of"] == ["../m"]
    for doc in (merged, copy, part):
        assert sweep_schema_errors(doc) == []


def test_compare_json_holds_to_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for side in ("base", "cur"):
        out = ["--out", str(tmp_path / side)]
        assert main([*RUN, "-m", "a,b", "--repeat", "3", *out, "--", "true"]) == 0
    capsys.readouterr()
    main(["compare", str(tmp_path / "base"), str(tmp_path / "cur"), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert compare_schema_errors(doc) == []
    schema = compare_schema(exact=True)
    assert set(doc) == set(schema["properties"])
    assert set(doc["changes"][0]) == set(schema["$defs"]["ChangeDoc"]["properties"])
    assert compare_schema_errors({**doc, "regressed": "no"})
    assert compare_schema_errors({**doc, "changes": [{**doc["changes"][0], "verdict": "worse"}]})


def test_the_schemas_verdicts_are_the_analysis_ones() -> None:
    """The model is below the analysis in the layers: its list of verdicts is held here."""
    assert list(VERDICTS) == [v.value for v in Verdict]
    verdict = compare_schema()["$defs"]["ChangeDoc"]["properties"]["verdict"]
    assert verdict["enum"] == list(VERDICTS)
