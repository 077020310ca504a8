"""docs/results.md, the result JSON's reference, names every key of the published schema
(``edgeprof/result.schema.json``): a new user found ``cpu.task_speed_pct``,
``memory.mapped_elsewhere_bytes``, ``target``, the ``events`` block, the parts of
``at_peak``/``peaks`` and the ``memory.pressure`` keys in ``result.json`` and nowhere on the
page.  A key added to the model now fails here until the page says what it is.  The same
holds for ``fit.json`` (``edgeprof/fit.schema.json``) and its table in docs/memory.md."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from tests.conftest import FIT_SCHEMA, RESULT_SCHEMA

DOC = Path(__file__).parents[2] / "docs" / "results.md"
FIT_DOC = DOC.with_name("memory.md")


def _resolve(node: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    """``node`` with its ``$ref`` followed, or the object/array branch of an ``anyOf``
    (``X | None``)."""
    if "$ref" in node:
        return defs[node["$ref"].rsplit("/", 1)[-1]]  # type: ignore[no-any-return]
    for branch in node.get("anyOf", ()):
        found = _resolve(branch, defs)
        if "properties" in found or "items" in found:
            return found
    return node


def schema_paths(node: Mapping[str, Any], defs: Mapping[str, Any], at: str = "") -> Iterator[str]:
    """Every property path: ``memory.at_peak.anon``, ``phases[].latency.p50_s``."""
    node = _resolve(node, defs)
    for key, sub in node.get("properties", {}).items():
        path = f"{at}.{key}" if at else key
        yield path
        yield from schema_paths(sub, defs, path)
    items = node.get("items")
    if isinstance(items, dict):
        yield from schema_paths(items, defs, at + "[]")


def test_every_key_of_the_schema_is_named_in_the_results_page() -> None:
    schema = json.loads(RESULT_SCHEMA.read_text())
    paths = list(schema_paths(schema, schema["$defs"]))
    # The walk reaches the nested blocks (a broken walk would pass an empty page).
    nested = (
        "cpu.task_speed_pct",
        "memory.mapped_elsewhere_bytes",
        "target",
        "events.iterations.over",
        "memory.at_peak.anon",
        "memory.peaks.file",
        "memory.pressure.refaults_file",
        "phases[].latency.throttling.distorted",
        "gpu.devices[].energy_j",
    )
    assert set(nested) <= set(paths)
    assert len(paths) == len(set(paths)) > 200
    assert not _unnamed(paths, DOC), f"docs/results.md does not name: {_unnamed(paths, DOC)}"


def test_every_key_of_the_fit_schema_is_named_in_the_fit_table() -> None:
    """One fit's keys (``$defs/Fit``: a one-model fit.json, or each of ``fits``), in the
    ``fit.json`` section's table of docs/memory.md."""
    schema = json.loads(FIT_SCHEMA.read_text())
    defs = schema["$defs"]
    paths = list(schema_paths(defs["Fit"], defs))
    nested = ("reference.at_peak.anon", "probes[].limit_bytes", "squeeze.held_bytes")
    assert set(nested) <= set(paths)
    assert len(paths) == len(set(paths)) > 60
    section = FIT_DOC.read_text().split("\n## fit.json\n", 1)[1]
    assert not _unnamed(paths, section), f"docs/memory.md does not name: {_unnamed(paths, section)}"


def _unnamed(paths: list[str], doc: Path | str) -> list[str]:
    """The ``paths`` that ``doc`` (a page, or its text) names nowhere in backquotes."""
    text = doc.read_text() if isinstance(doc, Path) else doc
    named = set(re.findall(r"`([^`\s]+)`", text))
    return [p for p in paths if p not in named]


def _table_after(heading: str) -> list[str]:
    """The first column's names of the first table under ``heading`` in docs/results.md."""
    text = DOC.read_text().split(f"\n{heading}\n", 1)[1]
    rows = text.split("\n|---", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    return [re.findall(r"`([^`]+)`", row)[0] for row in rows]


def test_the_exports_columns_and_sweep_keys_are_on_the_results_page(tmp_path: Path) -> None:
    """runs.csv's 42 columns, cells.csv's statistics and sweep.json's own keys had been
    documented nowhere (a warehouse schema was reverse-engineered from the files): the
    page's tables list exactly what the code writes, in its order."""
    from edgeprof.analysis.metrics import STAT_METRICS
    from edgeprof.report.export import RUN_COLUMNS, RUN_PLACE
    from edgeprof.sweeps.plan import SweepPlan
    from edgeprof.sweeps.sweep import run_sweep
    from tests.fakes import FakeBackend, linear

    assert _table_after("### `runs.csv`") == [*RUN_COLUMNS, *RUN_PLACE]
    assert _table_after("### `cells.csv`") == list(STAT_METRICS)
    plan = SweepPlan(("true",), models=("a",), repeat=1)
    run_sweep(plan, backend=FakeBackend(linear()), out=tmp_path, profile_options={})
    written = json.loads((tmp_path / "sweep.json").read_text())
    documented = _table_after("### `sweep.json`")
    assert set(written) <= set(documented)
    assert {"auto", "shard", "shards"} <= set(documented) - set(written)


def test_every_column_cells_csv_writes_is_on_the_results_page() -> None:
    """Each column of ``cells.csv`` is named in its section: its own (``label`` … the held-off
    columns, ``warnings``) in backquotes, and each statistic's eight by its ``<s>_…`` suffix
    and the statistic's row in the table, so a metric, latency or held-off column added to
    the file fails here until the page says what it is."""
    from edgeprof.report.export import STAT_FIELDS, cells_csv

    from .conftest import make_result

    header = cells_csv([make_result()]).splitlines()[0].split(",")
    section = DOC.read_text().split("\n### `cells.csv`\n", 1)[1].split("\n### ", 1)[0]
    stats = _table_after("### `cells.csv`")
    suffixes = [*STAT_FIELDS, "outliers"]
    assert _unnamed([f"<s>_{f}" for f in suffixes], section) == []
    per_stat = {f"{s}_{f}" for s in stats for f in suffixes}
    assert {c for c in header if c in per_stat} == per_stat  # each statistic's eight
    assert _unnamed([c for c in header if c not in per_stat], section) == []
