"""Exports of a set of runs: the sweep JSON, CSV (a row per run, a row per cell), Markdown."""

from __future__ import annotations

import csv
import io
import os
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..analysis.cells import cells, run_numbers, setting, successful
from ..analysis.held import held_count, held_off
from ..analysis.metrics import STAT_METRICS
from ..analysis.stats import median
from ..analysis.sweepfile import cell_dicts, shard_of, sweep_dict, warmup_of
from ..model import LatencyStats, RunResult
from ..names import printable
from ..resultfiles import EXPORT_FILES
from ..storage import files_relative_to, write_json_output, write_output
from .summary import BudgetGate, markdown_summary
from .table import TextTable

LATENCY_COLUMNS: dict[str, Callable[[LatencyStats], float | None]] = {
    "latency_p50_s": lambda lat: lat.p50_s,
    "latency_p95_s": lambda lat: lat.p95_s,
    "latency_p99_s": lambda lat: lat.p99_s,
    "it_per_s": lambda lat: lat.per_s,
    "items_per_s": lambda lat: lat.items_per_s,
    "latency_max_s": lambda lat: lat.max_s,
}
"""The run's own latency (all its iterations, ``result.json``'s ``latency``) in both CSVs:
empty where the workload reported no iterations (and ``items_per_s`` where none gave
ITEMS); a cell's is the median over its successful runs that have it (the CSVs had carried
no latency at all), but its ``latency_max_s`` the largest (:data:`CELL_LATENCY_OF`).  The
maximum came last, after the others' columns were in use (a reader by position keeps them)."""

CELL_LATENCY_OF: dict[str, Callable[[list[float | None]], float | None]] = {
    "latency_max_s": lambda vs: max((v for v in vs if v is not None), default=None),
}
"""A cell's latency column where it is no median of its runs': a worst case is one run's."""


def _cell_latency(key: str, values: list[float | None]) -> float | None:
    of = CELL_LATENCY_OF.get(key)
    return of(values) if of is not None else median(values, missing="skip")


def _latency(key: str) -> Callable[[RunResult], float | None]:
    get = LATENCY_COLUMNS[key]
    return lambda r: None if r.latency is None else get(r.latency)


RUN_COLUMNS: dict[str, Callable[[RunResult], object]] = {
    "label": lambda r: r.label,
    # The cell's setting, as cells.csv and sweep.json name it: with the core leased for an
    # integer --cpus in it, no row had joined cells.csv (that core is the cpuset column's).
    "limits": setting,
    "cpus": lambda r: r.limits.cpus,
    "cpuset": lambda r: None if r.limits.cpuset is None else ",".join(map(str, r.limits.cpuset)),
    "memory_limit_bytes": lambda r: r.limits.memory,
    # The board a run emulated: a team comparing boards had only cpus=1.2 and 0.5 to tell
    # their rows apart (a tester's), where result.json names the device.
    "device": lambda r: r.device,
    "started_at": lambda r: r.started_at,
    "backend": lambda r: r.backend,
    "mechanism": lambda r: r.mechanism,
    "termination": lambda r: r.termination.value,
    "exit_code": lambda r: r.exit_code,
    "wall_s": STAT_METRICS["wall_s"].get,
    "cpu_s": STAT_METRICS["cpu_s"].get,
    "cpu_user_s": lambda r: r.cpu.user_s,
    "cpu_system_s": lambda r: r.cpu.system_s,
    "cpu_pct": STAT_METRICS["cpu_pct"].get,
    "peak_cpu_pct": lambda r: r.cpu.peak_pct,
    "throttled_s": lambda r: r.cpu.throttled_s,
    "nr_throttled": lambda r: r.cpu.nr_throttled,
    # The periods the quota ran over, beside the throttled ones: nr_throttled alone ("×7")
    # says nothing of how often the quota held the run without it.
    "nr_periods": lambda r: r.cpu.nr_periods,
    # The time other tasks had the run's CPUs, which its warnings say and its wall time and
    # latencies hold: a reader of runs.csv alone had seen a 0.74 s wall time with no sign
    # that 61 % of it was another user's (a tester's shared host).
    "held_s": lambda r: r.cpu.held_s,
    "held_by_others_s": held_off,
    "lease_waited_s": lambda r: None if r.lease is None else r.lease.waited_s,
    "peak_bytes": STAT_METRICS["peak_bytes"].get,
    "peak_source": lambda r: r.memory.peak_source,
    "avg_bytes": STAT_METRICS["avg_bytes"].get,
    "peak_working_set_bytes": lambda r: r.memory.peak_working_set_bytes,
    "avg_working_set_bytes": lambda r: r.memory.avg_working_set_bytes,
    "oom_kills": lambda r: r.memory.oom_kills,
    "io_read_bytes": lambda r: r.io.read_bytes,
    "io_write_bytes": lambda r: r.io.write_bytes,
    "io_dirtied_bytes": lambda r: r.io.dirtied_bytes,
    "net_rx_bytes": lambda r: r.io.net_rx_bytes,
    "net_tx_bytes": lambda r: r.io.net_tx_bytes,
    "pids_peak": lambda r: r.pids_peak,
    "pids_refused": lambda r: r.pids_refused,
    # What the "waited for each other" warning counts against the CPUs, beside pids_peak:
    # checking a sweep's had meant opening each result.json (a verifier's).
    "busy_tasks_peak": lambda r: r.busy_tasks_peak,
    "processes_at_peak": lambda r: r.processes_at_peak,
    "processes_left": lambda r: r.processes_left,
    "samples": lambda r: r.samples.count,
    "gpu_peak_bytes": STAT_METRICS["gpu_peak_bytes"].get,
    "gpu_util_pct": STAT_METRICS["gpu_util_pct"].get,
    "energy_j": STAT_METRICS["energy_j"].get,
    "energy_per_item_j": STAT_METRICS["energy_per_item_j"].get,
    **{key: _latency(key) for key in LATENCY_COLUMNS},
    # The iterations it completed: an OOM kill's "after 125 iterations" in a sweep's CSV,
    # where only the Latency table's ITER column had said how far a run got.
    "iterations": lambda r: None if r.latency is None else r.latency.count,
    "iterations_raised": lambda r: None if r.latency is None else r.latency.raised,
    "command": lambda r: printable(shlex.join(r.command)),
}
"""Columns of ``runs.csv`` (then :data:`RUN_PLACE`): base units (seconds, bytes, percent of
one CPU, joules); empty = n/a (the GPU columns of a run that saw no GPU)."""

RUN_PLACE = ("run", "dir")
"""The last columns of ``runs.csv``: the run's number within its cell
(:func:`~edgeprof.analysis.cells.run_numbers`) and its directory relative to the exports'
(``16/2``), so that a row is tied to its ``result.json`` and ``samples.csv`` (only
``started_at`` had told them apart)."""

STAT_FIELDS = ("n", "mean", "sd", "median", "min", "max", "mad")


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""What makes a spreadsheet read a text cell as a formula (OWASP's list for CSV injection):
a label ``=1+2`` had been computed, and ``=HYPERLINK(…)`` would have been a link."""


def text_cell(text: str) -> str:
    """A text cell of a CSV file, prefixed with ``'`` where a spreadsheet would read it as a
    formula (:data:`FORMULA_START`): the prefix makes it text and is not shown.  Numbers are
    never passed here, so ``-1.5`` stays a number."""
    return "'" + text if text.startswith(FORMULA_START) else text


def _csv(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for row in rows:
        w.writerow(["" if v is None else text_cell(v) if isinstance(v, str) else v for v in row])
    return buf.getvalue()


def runs_csv(runs: Sequence[RunResult], out: Path | None = None) -> str:
    """A row per run, in the order given: :data:`RUN_COLUMNS`, then :data:`RUN_PLACE` (the
    directory relative to ``out``, where the CSV is written)."""
    rows = [
        [*(get(r) for get in RUN_COLUMNS.values()), n, run_dir(r, out)]
        for r, n in zip(runs, run_numbers(runs), strict=True)
    ]
    return _csv([*RUN_COLUMNS, *RUN_PLACE], rows)


CELL_HELD_COLUMNS: dict[str, Callable[[Sequence[RunResult]], float | int | None]] = {
    "held_by_others_s": lambda ok: median([held_off(r) for r in ok], missing="skip"),
    "held_runs": held_count,
}
"""``cells.csv``'s contention, over the cell's successful runs (as its statistics): the median
of ``runs.csv``'s ``held_by_others_s`` and how many runs ``edgeprof run`` warned were held off
their CPUs (empty: none measured it).  A sweep whose 5 runs were each warned of 41–78 %
held off had left in ``cells.csv`` only a latency outlier (a researcher's)."""


def run_records(runs: Sequence[RunResult]) -> list[dict[str, object]]:
    """``runs.csv``'s rows as dicts, for ``pandas.DataFrame`` (:func:`edgeprof.to_records`):
    the same columns, values as they are (``None``, not an empty cell; no spreadsheet
    prefix, :func:`text_cell`), and ``dir`` absolute, as a library result's ``samples.path``
    (no export directory to be relative to).  ``pd.DataFrame([r.to_dict()])`` had given 33
    columns of nested dicts (a notebook user's)."""
    header = [*RUN_COLUMNS, *RUN_PLACE]
    return [
        dict(zip(header, [*(get(r) for get in RUN_COLUMNS.values()), n, _dir(r)], strict=True))
        for r, n in zip(runs, run_numbers(runs), strict=True)
    ]


def _dir(r: RunResult) -> str | None:
    where = result_dir(r)
    # load("base") finds the files relative to the caller's directory, which may change.
    return None if where is None else os.path.abspath(where)


def result_dir(r: RunResult) -> Path | None:
    """The directory of ``r``'s ``result.json``; ``None`` where it is not known (no file
    written, or its files were not found where they are now)."""
    if r.samples.path is None:
        return None
    where = Path(r.samples.path).parent
    return where if (where / "result.json").is_file() else None


def run_dir(r: RunResult, out: Path | None) -> str | None:
    """The directory of ``r``'s ``result.json`` relative to ``out`` (``16/2``; ``../part-1/16/2``
    for a merged run); ``None`` where it is not known (no ``out``, or :func:`result_dir`)."""
    where = None if out is None else result_dir(r)
    return None if where is None or out is None else os.path.relpath(where, out)


def cells_csv(runs: Sequence[RunResult]) -> str:
    """A row per cell: label, limits, runs, ok, then ``<metric>_<n|mean|sd|…>`` and the
    outlier count of each metric, the latency columns (:data:`LATENCY_COLUMNS`, medians but
    the maximum's),
    the held-off columns (:data:`CELL_HELD_COLUMNS`) and the cell's warnings (`` | ``-separated)."""
    header = ["label", "limits", "runs", "ok"]
    for key in STAT_METRICS:
        header += [f"{key}_{f}" for f in STAT_FIELDS] + [f"{key}_outliers"]
    header += [*LATENCY_COLUMNS, *CELL_HELD_COLUMNS, "warnings"]
    by_cell = cells(runs)
    rows = []
    for c in cell_dicts(runs):
        row: list[object] = [c["label"], c["limits"], c["runs"], c["ok"]]
        for key in STAT_METRICS:
            st = c["stats"][key]
            fields: Mapping[str, object] = {} if st is None else st  # each field by its name
            row += [fields.get(f) for f in STAT_FIELDS]
            row.append(None if st is None else len(st["outliers"]))
        ok = successful(by_cell[c["label"], c["limits"]])
        row += [_cell_latency(key, [_latency(key)(r) for r in ok]) for key in LATENCY_COLUMNS]
        row += [get(ok) for get in CELL_HELD_COLUMNS.values()]
        row.append(" | ".join(c["warnings"]))
        rows.append(row)
    return _csv(header, rows)


EXPORTS = EXPORT_FILES
"""What :func:`write_exports` writes beside ``sweep.json``, in its order."""


def write_exports(
    out: Path,
    runs: Sequence[RunResult],
    sweep_json: bool = True,
    extra: Sequence[TextTable] = (),
    notes: Sequence[str] = (),
    plan: Mapping[str, Any] | None = None,
    gate: BudgetGate | None = None,
) -> list[Path]:
    """``sweep.json`` (unless the sweep wrote its own; with ``plan``, the sweep's own keys),
    ``runs.csv``, ``cells.csv`` and ``report.md`` (with ``extra`` tables, ``notes`` and the
    budget checks of ``gate``, as :func:`markdown_summary`) in ``out``; returns the paths
    written."""
    written = []
    if sweep_json:  # each file a ConfigError line when it cannot be written (a full disk)
        run_dicts = [files_relative_to(r, out).to_dict() for r in runs]
        write_json_output(out / "sweep.json", sweep_dict(runs, plan, run_dicts))
        written.append(out / "sweep.json")
    texts = (
        runs_csv(runs, out),
        cells_csv(runs),
        markdown_summary(runs, extra, notes, warmup_of(plan), shard_of(plan), gate),
    )
    for name, text in zip(EXPORTS, texts, strict=True):
        write_output(out / name, text)
        written.append(out / name)
    return written
