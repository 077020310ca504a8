"""The shape of ``sweep.json`` (a sweep's, a shard's, a merged sweep's, a ``report --out``
copy's), as typed dicts: its writer (:func:`edgeprof.analysis.sweepfile.sweep_dict`) returns
them, and :func:`edgeprof.model.schema.sweep_schema` makes the published schema
(``edgeprof/sweep.schema.json``, package data) from them, each key's description from its
docstring; each run is a ``result.json``'s object, whose schema the sweep's holds.  The
plan's keys come from several writers (the sweep, ``merge``, ``report --out``) through a
mapping, which ``mypy`` cannot hold to them: the test suite validates every ``sweep.json``
it writes against the exact schema instead.

    python -m edgeprof.model.schema sweep > edgeprof/sweep.schema.json
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypedDict

from .jsoncheck import AnyText
from .results import RunResult

SWEEP_SCHEMA = "edgeprof-sweep/1"
"""``schema`` of every ``sweep.json``."""

__all__ = ["SWEEP_SCHEMA", "CellDoc", "StatDoc", "SweepDoc"]


class StatDoc(TypedDict):
    """One statistic of a cell's successful runs, in the metric's base unit."""

    n: int
    """How many runs measured it."""
    mean: float
    """Their mean."""
    sd: float | None
    """Their sample standard deviation; `null`: one value."""
    median: float
    """Their median."""
    min: float
    """The least (a size: a whole number)."""
    max: float
    """The greatest (a size: a whole number)."""
    mad: float
    """The median absolute deviation."""
    outliers: list[int]
    """The outliers' 0-based indexes among the cell's successful runs."""


class CellDoc(TypedDict):
    """One cell (a model under one limit setting): its runs and their statistics, as
    `cells.csv`."""

    label: str
    """The model's label."""
    limits: str
    """The limit setting, as `cells.csv` writes it."""
    runs: int
    """The cell's runs."""
    ok: int
    """Those that succeeded: the statistics' runs (a whole-run figure's alone)."""
    stopped: int
    """Those `--timeout` stopped (a service's), no failure: counted in the per-iteration
    statistics (latency, throughput, energy per item), not in the whole-run ones."""
    stats: Mapping[str, StatDoc | None]
    """Per statistic (`wall_s`, `cpu_s`, `peak_bytes`, …, as `cells.csv`'s columns are
    named); `null`: not measured."""
    warnings: list[Annotated[str, AnyText]]
    """The cell's warnings (failed runs, outliers, a cold first run), as sentences."""


class AutoDoc(TypedDict):
    """`--repeat auto`'s bounds and target."""

    min_runs: int
    """Rounds before the first look."""
    max_runs: int
    """The most rounds."""
    target: float
    """The interval's half-width, a fraction, at which two neighbours are resolved."""


class ShardDoc(TypedDict):
    """A part of a sharded sweep (`--shard I/N`)."""

    index: int
    """The part, from 1."""
    count: int
    """The number of parts."""
    rounds: list[int]
    """The measured rounds it ran."""


class ShardRefDoc(ShardDoc):
    """A merged sweep's part: a :class:`ShardDoc` and where its file is."""

    path: Annotated[str, AnyText]
    """Its `sweep.json`, relative to the merged one's directory."""


class PhaseBudgetsDoc(TypedDict):
    """The phase whose iterations the latency and throughput budgets gate, at each level."""

    default: str
    """The default's (`""`: every phase)."""
    models: Mapping[str, str]
    """Per model label."""
    overrides: str
    """The command line's, over both."""


class _BudgetsDoc(TypedDict):
    source: Annotated[str, AnyText]
    """Where they came from: the budget file's path, or `command line`."""
    default: Mapping[str, float]
    """Every model's, by metric name (`wall`, `peak_memory`, …), in base units."""
    models: Mapping[str, Mapping[str, float]]
    """Per model label."""
    overrides: Mapping[str, float]
    """The command line's, over both."""


class BudgetsDoc(_BudgetsDoc, total=False):
    """The budgets a sweep was gated on (`--max-…`, `--budgets`; a merge's), in base units
    (a size a whole number of bytes)."""

    latency_phase: PhaseBudgetsDoc
    """The phases named, only where one is."""


class ResumedDoc(TypedDict):
    """One `run --resume` of the sweep."""

    at: str
    """When (UTC, ISO 8601, as `started_at`)."""
    kept: int
    """The runs kept from before it."""


class _SweepCore(TypedDict):
    schema: str
    """`edgeprof-sweep/1`: a file of another `schema` is refused as a sweep of that
    schema."""
    runs: list[Annotated[dict[str, Any], RunResult]]
    """The measured runs in the order they ran, each a full result as `result.json`."""
    cells: list[CellDoc]
    """A cell each, as `cells.csv`."""


class SweepDoc(_SweepCore, total=False):
    """A sweep's runs, its cells' statistics and its plan; a `sweep.json` the library writes
    from runs alone holds `schema`, `runs` and `cells`."""

    command: list[Annotated[str, AnyText]]
    """The workload's command, one string a word."""
    models: list[Annotated[str, AnyText]]
    """The `-m` models, as given (empty: none)."""
    limits: list[str]
    """Each limit setting asked, as a label (`cpus=1, memory=256.0MiB`)."""
    repeat: int | Literal["auto"]
    """Measured rounds per cell: a number, or `"auto"`."""
    auto: AutoDoc
    """`--repeat auto`'s bounds; only with it."""
    shard: ShardDoc
    """A part's own (`--shard I/N`); absent from a whole or merged sweep."""
    warmup: int
    """Warm-up rounds before the measured ones (`--warmup`)."""
    workdir: Annotated[str, AnyText]
    """The directory the workload ran in (`--cwd`, else where edgeprof ran)."""
    argv: list[Annotated[str, AnyText]]
    """The command line of the process that wrote the file, one string a word."""
    interrupted: bool
    """The sweep was stopped (Ctrl-C, a signal); false in a merged sweep."""
    stopped: Annotated[str, AnyText] | None
    """Why the sweep ended before its plan; `null`: it ran its plan."""
    budgets: BudgetsDoc
    """The budgets the sweep was gated on; absent where there were none."""
    resumed: list[ResumedDoc]
    """Each `run --resume` of the sweep; absent from a sweep made in one go."""
    warmup_runs: list[Annotated[dict[str, Any], RunResult]]
    """The warm-up runs, each a full result as `result.json` (not in the statistics)."""
    notes: list[Annotated[str, AnyText]]
    """A merged sweep's: what its parts' hosts make of the figures, as sentences."""
    shards: list[ShardRefDoc]
    """A merged sweep's parts."""
    report_of: list[Annotated[str, AnyText]]
    """A `report --out` copy's: the results it was made from, each relative to the copy's
    directory."""
