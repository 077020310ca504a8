"""Reading the device CSV: the measurements made on the real device with its native tool.

Comma-separated, a header row, ``#`` lines are comments:

* ``model`` (required): the run label (``RunResult.label``); a label's file extension may be
  left out (``mobilenet_v2_0.5`` matches runs labelled ``mobilenet_v2_0.5.onnx``);
* ``cpus``, ``memory`` (optional): the profiler setting the row belongs to (``--cpus`` and
  ``--memory`` of the runs; memory in Docker's spelling, ``1g``);
* ``family`` (optional): the model's family (``resnet``, ``mobilenet``): a calibration fits
  each family with enough points on its own as well (:mod:`.families`); an empty cell is none;
* ``notes`` (optional, ignored);
* one or more metric columns ``METRIC_UNIT``: the unit is part of the name and required,
  e.g. ``runtime_ms``, ``peak_mem_mb``.  METRIC is one of :data:`.units.METRICS`: ``runtime``
  (compared with the profiler's wall time), ``cpu_time``, ``avg_cpu`` (average CPU %, 100 =
  one CPU), ``peak_mem``, ``avg_mem``, ``latency`` (per-iteration latency, median),
  ``latency_mean``; UNIT one of :data:`.units.UNITS` for its kind: ``kb``, ``mb``, ``gb`` are
  decimal (10³, 10⁶, 10⁹ bytes), ``kib``, ``mib``, ``gib`` binary.  An empty cell is a value
  not measured.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ...errors import ConfigError
from ...names import has_control
from ...storage import read_input
from ...units import counted, format_binary, parse_size
from .units import METRICS, UNITS, base_unit

MAX_VALUE = 1e15
"""The largest value a device CSV may give, in its metric's base unit (seconds, bytes,
percent): beyond any device (31 million years, a petabyte), and small enough that a fit's
sums of squares stay finite (``1e200 ** 2`` overflows)."""

SETTING_COLUMNS = ("cpus", "memory")
IGNORED_COLUMNS = ("notes",)
FAMILY_COLUMN = "family"


@dataclass(frozen=True)
class DeviceRow:
    line: int
    model: str
    cpus: float | None
    memory: int | None
    values: Mapping[str, float]
    """Metric name → value in the base unit (only the cells that were filled in)."""
    family: str | None = None

    def setting(self) -> str:
        parts = []
        if self.cpus is not None:
            parts.append(f"cpus={self.cpus:g}")
        if self.memory is not None:
            parts.append(f"memory={format_binary(self.memory)}")
        return ", ".join(parts)

    def describe(self) -> str:
        s = self.setting()
        return f"{self.model} ({s})" if s else self.model


@dataclass(frozen=True)
class Measurements:
    path: str
    units: Mapping[str, str]
    """Metric name → the unit its column used (how values are shown back)."""
    rows: tuple[DeviceRow, ...]


def _parse_column(name: str, path: str) -> tuple[str, str] | None:
    """``peak_mem_mb`` → (``peak_mem``, ``mb``); ``None`` for model/setting/ignored columns."""
    key = name.strip().lower()
    if key in ("model", FAMILY_COLUMN, *SETTING_COLUMNS, *IGNORED_COLUMNS):
        return None
    if key in METRICS:
        units = ", ".join(f"{key}_{u}" for u in UNITS[METRICS[key].kind])
        raise ConfigError(f"{path}: column {name!r} needs its unit in the name: {units}")
    for metric in sorted(METRICS, key=len, reverse=True):
        if key.startswith(metric + "_"):
            unit = key[len(metric) + 1 :]
            allowed = UNITS[METRICS[metric].kind]
            if unit not in allowed:
                raise ConfigError(
                    f"{path}: column {name!r}: unknown unit {unit!r} for {metric} "
                    f"(use one of {', '.join(allowed)})"
                )
            return metric, unit
    raise ConfigError(
        f"{path}: unknown column {name!r} (expected model, cpus, memory, family, notes, or "
        f"METRIC_UNIT with METRIC one of {', '.join(METRICS)}, e.g. runtime_ms, peak_mem_mb)"
    )


def read_measurements(path: Path) -> Measurements:
    """Read and validate a device CSV (module docstring); any problem is one
    :class:`ConfigError` naming the file, and the line where there is one."""
    p = str(path)
    text = read_input(path, "measurements ")  # a spreadsheet's BOM dropped by read_capped
    numbered = [
        (i + 1, ln)
        for i, ln in enumerate(text.splitlines())
        if ln.strip() and not ln.lstrip().startswith("#")
    ]
    if not numbered:
        raise ConfigError(f"{p}: empty (expected a header row such as model,runtime_ms)")
    records = [_record(ln, f"{p} line {i}") for i, ln in numbered]
    header = [h.strip() for h in records[0]]
    lowered = [h.lower() for h in header]
    dup = next((h for h in lowered if lowered.count(h) > 1), None)
    if dup is not None:
        raise ConfigError(f"{p}: column {dup!r} appears twice")
    if "model" not in lowered:
        # One column holding ';' or tabs: a spreadsheet's export in another separator.
        other = next((c for c in (";", "\t") if len(header) == 1 and c in header[0]), None)
        hint = f"; it looks {other!r}-separated: separate the columns with commas"
        raise ConfigError(
            f"{p}: no 'model' column (header: {','.join(header)}){hint if other else ''}"
        )
    columns: dict[int, tuple[str, str]] = {}
    for i, h in enumerate(header):
        parsed = _parse_column(h, p)
        if parsed is None:
            continue
        if any(m == parsed[0] for m, _ in columns.values()):
            raise ConfigError(f"{p}: metric {parsed[0]} has two columns")
        columns[i] = parsed
    if not columns:
        raise ConfigError(
            f"{p}: no metric column (expected METRIC_UNIT with METRIC one of "
            f"{', '.join(METRICS)}, e.g. runtime_ms, peak_mem_mb)"
        )
    named = ("model", FAMILY_COLUMN, *SETTING_COLUMNS)
    idx = {name: lowered.index(name) for name in named if name in lowered}
    rows: list[DeviceRow] = []
    seen: dict[tuple[str, float | None, int | None], int] = {}
    for (line, _), rec in zip(numbered[1:], records[1:], strict=True):
        where = f"{p} line {line}"
        if len(rec) != len(header):
            fields = counted(len(rec), "field")
            raise ConfigError(f"{where}: {fields}, the header has {len(header)}")
        model = rec[idx["model"]].strip()
        if not model:
            raise ConfigError(f"{where}: empty model name")
        texts = [("model", model)]
        if FAMILY_COLUMN in idx:
            texts.append((FAMILY_COLUMN, rec[idx[FAMILY_COLUMN]]))
        for column, text in texts:
            if has_control(text):  # shown in tables and warnings: an escape, a newline
                raise ConfigError(
                    f"{where}, column {column}: {ascii(text.strip())[:60]} holds a control "
                    "character"
                )
        cpus = _number(rec[idx["cpus"]], where, "cpus") if "cpus" in idx else None
        memory = None
        if "memory" in idx and rec[idx["memory"]].strip():
            try:
                memory = parse_size(rec[idx["memory"]])
            except ConfigError as exc:
                raise ConfigError(f"{where}, column memory: {exc}") from None
        family = (rec[idx[FAMILY_COLUMN]].strip() or None) if FAMILY_COLUMN in idx else None
        values = {}
        for i, (metric, unit) in columns.items():
            v = _number(rec[i], where, header[i])
            if v is not None:
                values[metric] = v * UNITS[METRICS[metric].kind][unit]
                if values[metric] > MAX_VALUE:
                    most = f"{MAX_VALUE:g} {base_unit(METRICS[metric].kind)}"
                    raise ConfigError(
                        f"{where}, column {header[i]}: {rec[i].strip()[:40]!r} is beyond any "
                        f"device (more than {most})"
                    )
        key = (model, cpus, memory)
        if key in seen:
            row = DeviceRow(line, model, cpus, memory, values)
            raise ConfigError(
                f"{where}: duplicate row for {row.describe()} (first on line {seen[key]})"
            )
        seen[key] = line
        rows.append(DeviceRow(line, model, cpus, memory, values, family))
    if not rows:
        raise ConfigError(f"{p}: a header but no rows")
    return Measurements(p, {m: u for m, u in columns.values()}, tuple(rows))


def _record(line: str, where: str) -> list[str]:
    """One line's fields.  Lines are read one at a time (their numbers are the file's), and
    strictly: a quote left open is this line's error, not a field that swallows the next
    lines (which left fewer records than lines)."""
    try:
        return next(csv.reader([line], strict=True), [])
    except csv.Error as exc:  # also a field past the csv module's limit of 128 KiB
        raise ConfigError(f"{where}: not CSV: {exc}") from None


_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+)?|[+-]?(inf|infinity|nan)", re.I | re.A)
"""What a spreadsheet writes: ASCII digits (float() would also take '١' or '1_0')."""


def _number(text: str, where: str, column: str) -> float | None:
    t = text.strip()
    if not t:
        return None
    if not _NUMBER.fullmatch(t):
        raise ConfigError(f"{where}, column {column}: {t[:40]!r} is not a number")
    v = float(t)
    if not math.isfinite(v) or v < 0:
        raise ConfigError(f"{where}, column {column}: {t!r} must be a finite number ≥ 0")
    return v
