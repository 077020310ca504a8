"""The published schema of ``fit.json`` (``edgeprof/fit.schema.json``): made from the typed
dicts its writer returns (:mod:`edgeprof.model.fitdoc`), so a key ``FitOutcome.to_dict``
writes cannot be missing from it.  That every fit.json the suite writes holds to it is the
autouse ``results_match_the_schema`` check of ``tests/conftest.py``; ``fit.json`` had no
schema at all, nor a ``schema_version``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from edgeprof.cli import main
from edgeprof.model.schema import fit_schema
from tests.conftest import FIT_SCHEMA, fit_schema_errors

MIB = 1 << 20


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    published: dict[str, Any] = json.loads(FIT_SCHEMA.read_text())
    return published


def test_the_published_fit_schema_is_the_models(schema: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema == fit_schema(), (
        "edgeprof/fit.schema.json is out of date: "
        ".venv/bin/python -m edgeprof.model.schema fit > edgeprof/fit.schema.json"
    )
    fit = schema["$defs"]["Fit"]
    assert fit["required"][0] == "schema_version"
    assert fit["properties"]["schema_version"]["const"] == 1
    # Descriptions come from the typed dicts' docstrings; the memory blocks are result.json's.
    assert fit["properties"]["min_memory_bytes"]["description"].startswith("The answer: ")
    probe = schema["$defs"]["FitProbe"]["properties"]
    assert probe["termination"]["enum"] == ["exited", "signaled", "oom", "timeout", "interrupted"]
    assert probe["wall_s"]["items"]["minimum"] == 0  # the reader's rule, on each number
    ref = schema["$defs"]["FitReference"]["properties"]
    assert ref["at_peak"] == {
        "description": ref["at_peak"]["description"],
        "anyOf": [{"$ref": "#/$defs/MemoryParts"}, {"type": "null"}],
    }


def _keys(schema: dict[str, Any], name: str) -> set[str]:
    return set(schema["$defs"][name]["properties"])


def test_a_fit_holds_to_it_key_for_key(
    capfd: pytest.CaptureFixture[str], tmp_path: Path, schema: dict[str, Any]
) -> None:
    """A search on the scripted backend (``true``: a probe at 8 MiB, its 6 MiB floor and 2 MiB
    of room), every key it writes in the schema and every key of the schema written."""
    assert main(["fit", "--backend", "fake", "--out", str(tmp_path / "f"), "--", "true"]) == 0
    capfd.readouterr()
    doc = json.loads((tmp_path / "f" / "fit.json").read_text())
    assert fit_schema_errors(doc) == []
    assert doc["schema_version"] == 1
    assert set(doc) == _keys(schema, "Fit")
    assert set(doc["reference"]) == _keys(schema, "FitReference")
    assert [p["limit_bytes"] for p in doc["probes"]] == [8 * MIB]
    assert set(doc["probes"][0]) == _keys(schema, "FitProbe")
    assert doc["min_memory_bytes"] == 8 * MIB and doc["fits"] is True

    # Several models' fit.json: the fits in a list, at least two of them.
    assert fit_schema_errors({"fits": [doc, doc]}) == []
    assert fit_schema_errors({"fits": [doc]})
    # What the writer does not write is refused: an unknown key, a wrong type, a negative
    # size, a missing key, another version, a probe's unknown end.
    probe = doc["probes"][0]
    for wrong in (
        {**doc, "fits": "yes"},
        {**doc, "room_bytes": -1},
        {k: v for k, v in doc.items() if k != "contention"},
        {**doc, "schema_version": 2} | {"stopped": None},
        {**doc, "probes": [{**probe, "termination": "crashed"}]},
        {**doc, "reference": {**doc["reference"], "at_peak": {"anon": 1}}},
    ):
        errors = list(jsonschema.Draft202012Validator(schema).iter_errors(wrong))
        assert errors, wrong
    # A key this release does not know (a newer one's): the published schema takes it, the
    # exact one, which edgeprof's own files hold to, does not.
    assert not list(jsonschema.Draft202012Validator(schema).iter_errors({**doc, "peak": 1}))
    exact = jsonschema.Draft202012Validator(fit_schema(exact=True))
    assert list(exact.iter_errors({**doc, "peak": 1}))


def test_the_conftest_check_names_what_breaks_it(tmp_path: Path) -> None:
    """The autouse check reads fit.json (a hand-written baseline without ``schema_version``
    is a test's own file, left alone)."""
    from tests.conftest import schema_errors

    path = tmp_path / "sub" / "fit.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"fits": [{"name": "a", "min_memory_bytes": 1}] * 2}))
    assert schema_errors(path) == []
    path.write_text(json.dumps({"schema_version": 1, "name": "a"}))
    (error,) = schema_errors(path)
    assert error.startswith(f"{path} at /: ") and "is not valid under any of the given" in error
    path.unlink()  # not left for the autouse check to fail this test
