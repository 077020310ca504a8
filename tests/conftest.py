"""Shared test policy: tiers that cannot set themselves up skip on a laptop, fail in CI."""

from __future__ import annotations

import functools
import importlib
import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"

HANG_S = 600.0
"""The backstop of a wait that ends on an event (a file written, a process ended): it bounds
a hang, never a speed.  Three edgeprof runs starting at once in a TCG guest, its host core
shared with stress-ng, took over 60 s to reach their workloads."""

# The suite's Ctrl-C tests are a user's Ctrl-C at a terminal.  A suite started in the
# background of a non-interactive shell (`.ci/run &`, a CI runner's step) inherits SIGINT and
# SIGQUIT ignored, and edgeprof rightly leaves an ignored stop signal ignored, as Python
# does: the dispositions a foreground process has, for this process and the edgeprof
# processes it starts (a handler becomes the default across exec; "ignored" would be kept).
for _sig in (signal.SIGINT, signal.SIGQUIT):
    if signal.getsignal(_sig) is signal.SIG_IGN:
        signal.signal(_sig, signal.default_int_handler if _sig == signal.SIGINT else signal.SIG_DFL)

# The suite runs its workloads as root and has them write into root's temporary directories.
# Under `sudo make test`, edgeprof would drop them to the sudo user (edgeprof.measure.privilege):
# the tests that check that drop set SUDO_UID themselves.
for _var in ("SUDO_UID", "SUDO_GID", "SUDO_USER", "SUDO_COMMAND"):
    os.environ.pop(_var, None)


@pytest.fixture(autouse=True)
def isolated_core_leases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Each test leases cores in a directory of its own (edgeprof.measure.leases), inherited
    by the edgeprof processes it starts: the suite neither waits for the host's other
    edgeprof runs nor holds their cores, and no test's lease outlives it."""
    directory = tmp_path_factory.mktemp("leases")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EDGEPROF_LEASE_DIR", str(directory))
        yield directory


@pytest.fixture(autouse=True)
def no_caller_note(monkeypatch: pytest.MonkeyPatch) -> None:
    """profile()'s warning of a large caller (:func:`edgeprof.sweeps.library.with_caller_note`)
    left out: a test process that imported torch holds ~400 MiB, so the warnings some tests
    hold whole would depend on which of them a worker ran before.  Its own test undoes this."""
    from edgeprof.sweeps import library

    monkeypatch.setattr(library, "caller_rss", lambda status=None: None)


RESULT_SCHEMA = Path(__file__).resolve().parents[1] / "edgeprof" / "result.schema.json"
FIT_SCHEMA = RESULT_SCHEMA.with_name("fit.schema.json")
PREDICTIONS_SCHEMA = RESULT_SCHEMA.with_name("predictions.schema.json")
SWEEP_SCHEMA = RESULT_SCHEMA.with_name("sweep.schema.json")
COMPARE_SCHEMA = RESULT_SCHEMA.with_name("compare.schema.json")


@functools.cache
def _validator(schema_path: Path) -> Any:
    """The exact form of the published schema at ``schema_path``: edgeprof's own files hold
    to it, so a key the model does not document is never written (the published schema is
    open to a newer release's keys, and would let one through)."""
    import jsonschema

    from edgeprof.model import schema as made

    exact = {
        RESULT_SCHEMA: made.result_schema,
        FIT_SCHEMA: made.fit_schema,
        PREDICTIONS_SCHEMA: made.predictions_schema,
        SWEEP_SCHEMA: made.sweep_schema,
        COMPARE_SCHEMA: made.compare_schema,
    }[schema_path](exact=True)
    return jsonschema.Draft202012Validator(exact, format_checker=None)


def _result_validator() -> Any:
    return _validator(RESULT_SCHEMA)


def fit_schema_errors(data: object, where: object = "fit.json") -> list[str]:
    """How ``data`` (a fit.json's document: one fit, or ``{"fits": [...]}``) breaks the
    published edgeprof/fit.schema.json; none for a document that is not edgeprof's (a fit
    without ``schema_version`` 1: a test's hand-written baseline, a file from before it)."""
    if not isinstance(data, dict):
        return []
    fits = data["fits"] if isinstance(data.get("fits"), list) else [data]
    if not fits or not all(isinstance(f, dict) and f.get("schema_version") == 1 for f in fits):
        return []
    return [
        f"{where} at /{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}"
        for e in _validator(FIT_SCHEMA).iter_errors(data)
    ]


def predictions_schema_errors(data: object, where: object = "predictions") -> list[str]:
    """How ``data`` (a ``--predictions`` document) breaks the published
    edgeprof/predictions.schema.json; none for a document that is not one (no ``"schema":
    "edgeprof-predictions/1"``)."""
    from edgeprof.model.predictionsdoc import PREDICTIONS_SCHEMA as NAME

    if not isinstance(data, dict) or data.get("schema") != NAME:
        return []
    return [
        f"{where} at /{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}"
        for e in _validator(PREDICTIONS_SCHEMA).iter_errors(data)
    ]


def sweep_schema_errors(data: object, where: object = "sweep.json") -> list[str]:
    """How ``data`` (a sweep.json's document) breaks the published edgeprof/sweep.schema.json,
    its runs left to the result check (:func:`schema_errors`: a test's hand-written run is
    left alone); none for a document that is not edgeprof's (no ``"schema":
    "edgeprof-sweep/1"``, or no ``cells``: a test's hand-written sweep)."""
    from edgeprof.model.sweepdoc import SWEEP_SCHEMA as NAME

    if not isinstance(data, dict) or data.get("schema") != NAME or "cells" not in data:
        return []
    runs: dict[str, list[object]] = {
        k: [] for k in ("runs", "warmup_runs") if isinstance(data.get(k), list)
    }
    return [
        f"{where} at /{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}"
        for e in _validator(SWEEP_SCHEMA).iter_errors({**data, **runs})
    ]


def compare_schema_errors(data: object) -> list[str]:
    """How ``data`` (``compare --json``'s object) breaks edgeprof/compare.schema.json."""
    return [
        f"compare --json at /{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}"
        for e in _validator(COMPARE_SCHEMA).iter_errors(data)
    ]


def schema_errors(path: Path) -> list[str]:
    """How ``path`` (a result.json, a sweep.json and its runs, a fit.json, or a predictions
    document of any name) breaks its published schema; none for a file that is not edgeprof's
    (no ``schema_version`` 1 in it, or no predictions ``schema``)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return []  # a test's own garbage, or a file cut short on purpose
    if path.name == "fit.json":
        return fit_schema_errors(data, path)
    if path.name not in ("result.json", "sweep.json"):
        return predictions_schema_errors(data, path)
    if not isinstance(data, dict):
        return []
    runs = (
        [data]
        if path.name == "result.json"
        else [*data.get("runs", []), *data.get("warmup_runs", [])]
    )
    errors = [] if path.name == "result.json" else sweep_schema_errors(data, path)
    for i, run in enumerate(runs):
        if not isinstance(run, dict) or run.get("schema_version") != 1:
            continue
        for e in _result_validator().iter_errors(run):
            where = "/".join(map(str, e.absolute_path))
            errors.append(f"{path} (run {i}) at /{where}: {e.message[:200]}")
    return errors


@pytest.fixture(autouse=True)
def results_match_the_schema(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every result.json and sweep.json a test leaves in its ``tmp_path`` holds to the
    published schema (edgeprof/result.schema.json; each sweep.json's own keys to
    edgeprof/sweep.schema.json), every fit.json to
    edgeprof/fit.schema.json, and every predictions document (``--predictions FILE``, any
    ``*.json``) to edgeprof/predictions.schema.json: whatever the run, the backend or the
    tier.  Files that are not edgeprof's (a test's garbage) are left alone
    (:func:`schema_errors`)."""
    # Asked for now, so that it is torn down after this check, not before.
    tmp = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if tmp is None:
        return
    errors = [e for p in tmp.rglob("*.json") for e in schema_errors(p)]
    if errors:
        pytest.fail("files that break edgeprof's published schemas:\n" + "\n".join(errors[:10]))


def require(ok: bool, reason: str) -> None:
    """Skip with ``reason`` when ``ok`` is false — except in CI, where no tier may skip."""
    if ok:
        return
    if IN_CI:
        pytest.fail(f"tier cannot run in CI: {reason}", pytrace=False)
    pytest.skip(reason)


def require_module(name: str, extra: str) -> ModuleType:
    """``import name``, or :func:`require` fails (CI) / skips (a laptop) naming the extra."""
    try:
        return importlib.import_module(name)
    except ImportError:
        require(False, f"needs {name}: pip install '.[{extra}]'")
        raise


def ranking_order(text: str, metric: str) -> list[str]:
    """The models of the first ``Ranking by <metric> under …`` (or ``… with no limits``)
    table in ``text``, in order."""
    lines = text.splitlines()
    heads = (f"Ranking by {metric} under ", f"Ranking by {metric} with no limits")
    start = next(i for i, ln in enumerate(lines) if ln.startswith(heads))
    order = []
    for ln in lines[start + 3 :]:
        parts = ln.split()
        if not parts or not parts[0].isdigit():
            break
        order.append(parts[1])
    return order
