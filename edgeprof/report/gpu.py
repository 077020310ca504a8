"""The GPU section of a report: each run's GPUs, its phases' share, its energy per iteration
(the numbers are :class:`edgeprof.model.GpuStats`'s, measured by :mod:`edgeprof.measure.gpu`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..measure.inputs import finer_interval
from ..model import GpuDevice, RunResult
from ..model.gpu import GPU_MIN_INTERVAL_S
from ..names import shown_name
from ..units import format_binary, format_energy
from .table import markdown_heading, markdown_items, markdown_lines, plain_table

GPU_COLUMNS = (
    "NAME",
    "GPU",
    "MEMORY PEAK",
    "UTIL AVG / PEAK",
    "ENERGY",
    "POWER AVG / PEAK",
    "SM CLOCK",
    "TEMP",
    "THROTTLED BY",
)
PHASE_COLUMNS = ("NAME", "PHASE", "GPU ENERGY", "GPU MEMORY PEAK")


def _w(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.0f}W"


def _device_row(label: str, d: GpuDevice) -> list[str]:
    memory = format_binary(d.memory_peak_bytes)
    if d.memory_source == "device":
        memory += " (device)"  # the device's rise, not the run's own processes
    if d.utilization_avg_pct is None:
        util = "n/a"
    else:
        peak = "n/a" if d.utilization_peak_pct is None else f"{d.utilization_peak_pct:.0f}%"
        util = f"{d.utilization_avg_pct:.1f}% / {peak}"
        if d.utilization_source == "device":
            util += " (device)"
    clocks = (
        "n/a"
        if d.sm_clock_max_mhz is None
        else f"{d.sm_clock_min_mhz}–{d.sm_clock_max_mhz} MHz"
        if d.sm_clock_min_mhz != d.sm_clock_max_mhz
        else f"{d.sm_clock_max_mhz} MHz"
    )
    return [
        label,
        f"{d.index}: {d.name}",
        memory,
        util,
        format_energy(d.energy_j),
        f"{_w(d.power_avg_w)} / {_w(d.power_peak_w)}",
        clocks,
        "n/a" if d.temperature_peak_c is None else f"{d.temperature_peak_c}°C",
        ", ".join(d.throttle_reasons) or "—",
    ]


def gpu_rows(results: Sequence[RunResult]) -> list[list[str]]:
    return [_device_row(r.label, d) for r in results if r.gpu for d in r.gpu.devices]


def gpu_phase_rows(results: Sequence[RunResult]) -> list[list[str]]:
    return [
        [r.label, shown_name(p.name), format_energy(p.energy_j), format_binary(p.memory_peak_bytes)]
        for r in results
        if r.gpu
        for p in r.gpu.phases
    ]


def gpu_notes(results: Sequence[RunResult]) -> list[str]:
    """Energy per iteration and per item, and what could not be matched."""
    out = []
    for r in results:
        g = r.gpu
        if g is None or g.energy_per_iteration_j is None:
            continue
        line = f"{r.label}: {format_energy(g.energy_per_iteration_j)} of GPU energy per iteration"
        if g.energy_per_item_j is not None:
            line += f", {format_energy(g.energy_per_item_j)} per item"
        if r.latency is not None:
            line += f" ({r.latency.count} iterations)"
        out.append(line)
    out += [n for n in map(_unread_phases, results) if n is not None]
    if any(d.memory_source == "device" for r in results if r.gpu for d in r.gpu.devices):
        out.append(
            "(device): the GPU's used memory above its level at the start, or its "
            "utilisation whoever used it: the run's own processes could not be told apart"
        )
    return out


def _unread_phases(r: RunResult) -> str | None:
    """Why a phase's GPU memory peak is ``n/a``: no GPU reading fell inside it (a phase
    shorter than the interval).  Seen on an H200: 20 batches of 32 in an 11.8 ms ``infer``
    phase, read every 0.1 s."""
    g = r.gpu
    unread = {p.name for p in g.phases if p.memory_peak_bytes is None} if g else set()
    if g is None or not unread:
        return None
    walls = [p.wall_s for p in r.phases if p.name in unread]
    finer = finer_interval(g.interval_s, min(walls, default=g.interval_s), GPU_MIN_INTERVAL_S)
    names = ", ".join(shown_name(n) for n in sorted(unread))
    fix = (
        f"--interval {finer:g} reads shorter phases"
        if finer < g.interval_s
        else f"a phase this short is over between two readings even at {GPU_MIN_INTERVAL_S:g}s"
    )
    return (
        f"{r.label}: no GPU reading (every {g.interval_s:g}s) fell inside {names}: "
        f"its GPU memory peak is n/a; {fix}"
    )


def render_gpu(results: Sequence[RunResult], *, markdown: bool = False) -> str:
    """The ``GPU`` table and, when some run has them, ``GPU by phase``; ``""`` when no run
    saw a GPU."""
    rows = gpu_rows(results)
    if not rows:
        return ""
    fmt: Callable[[str, Sequence[str], list[list[str]]], str] = (
        _markdown if markdown else plain_table
    )
    out = [fmt("GPU", GPU_COLUMNS, rows)]
    notes = gpu_notes(results)
    if notes:
        out.append(markdown_items(notes) if markdown else "".join(n + "\n" for n in notes))
    phases = gpu_phase_rows(results)
    if phases:
        out.append(fmt("GPU by phase", PHASE_COLUMNS, phases))
    return "\n".join(out)


def _markdown(title: str, columns: Sequence[str], rows: list[list[str]]) -> str:
    return "\n".join([markdown_heading(title), "", *markdown_lines(columns, rows)]) + "\n"
