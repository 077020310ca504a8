"""``edgeprof fit`` rendered: the unlimited run's composition, the curve of probes (limit →
time, stalls, refaults, ending), the answer and the answer with its margin."""

from __future__ import annotations

from collections.abc import Sequence

from ..sweeps.fit import FitOutcome, Probe
from ..units import format_binary
from .memory import composition
from .table import plain_table

CURVE = ("LIMIT", "TIME (s)", "VS UNLIMITED", "STALL", "REFAULTS", "MAJ FAULTS", "END", "VERDICT")


def probe_row(p: Probe, reference_s: float) -> list[str]:
    last = p.runs[-1]
    pressure = last.memory.pressure
    t = p.to_dict()
    stall = "n/a" if t["stall_s"] is None else f"{t['stall_s']:.3f}s"
    rel = f"{100 * (t['time_s'] / reference_s - 1):+.0f}%" if reference_s > 0 else "n/a"
    return [
        format_binary(p.limit),
        f"{t['time_s']:.3f}" + (f" ({len(p.runs)} runs)" if len(p.runs) > 1 else ""),
        rel if last.termination.value == "exited" else "-",
        stall,
        "n/a" if pressure is None or t["refaults"] is None else str(t["refaults"]),
        "n/a" if t["major_faults"] is None else str(t["major_faults"]),
        last.termination.value,
        p.verdict.reason,
    ]


def render_fit(outcomes: Sequence[FitOutcome]) -> str:
    return "\n".join(_render_one(o) for o in outcomes)


def _render_one(o: FitOutcome) -> str:
    ref = o.reference[-1] if o.reference else None
    b = o.bounds
    lines = []
    if ref is not None:
        lines.append(
            f"{o.label}: {ref.backend}/{ref.mechanism}, limits: {ref.limits.describe()}"
            + (f", device {ref.device}" if ref.device else "")
        )
        lines.append(
            f"unlimited: {o.time.metric} {o.time.seconds:.3f}s ({len(o.reference)} runs, "
            f"spread {100 * o.noise:.0f}%); "
            + (composition(ref.memory.at_peak, b.peak) or f"peak {format_binary(b.peak)}")
        )
    if o.stopped is not None:
        lines.append(f"no search: {o.stopped}")
        return "\n".join(lines) + "\n"
    lines.append(
        f"searched {format_binary(b.floor)} (floor: anon + shmem + kernel) to "
        f"{format_binary(b.top)} ({'ceiling' if b.top < b.peak else 'peak'}) "
        f"to {format_binary(b.resolution)}: {len(o.probes)} probes (at most {o.max_probes})"
    )
    rows = [probe_row(p, o.time.seconds) for p in sorted(o.probes, key=lambda p: p.limit)]
    lines.append("")
    lines.append(plain_table(None, CURVE, rows).rstrip("\n"))
    lines.append("")
    what = f"{o.time.metric} within {100 * o.tolerance:.0f}% of the unlimited run's"
    if o.answer is None:
        assert b.ceiling is not None
        lines.append(
            f"does not fit in {format_binary(b.ceiling)}: nothing up to it completes with "
            f"{what}; it needs at least {format_binary(b.floor)} (its anonymous, shared and "
            "kernel memory, which no limit can reclaim without swap)"
        )
    else:
        lines.append(
            f"smallest memory: {format_binary(o.answer)} ({what}; resolution "
            f"{format_binary(b.resolution)})"
        )
        assert o.recommended is not None
        extra = f"; the peak, {format_binary(b.peak)}, is {b.peak / o.answer:.1f}× the need"
        lines.append(
            f"with a {100 * o.margin:.0f}% margin: {format_binary(o.recommended)}"
            + (extra if b.peak > o.answer else "")
        )
        if b.ceiling is not None:
            lines.append(
                f"fits in {format_binary(b.ceiling)} with "
                f"{format_binary(b.ceiling - o.answer)} to spare"
            )
    return "\n".join(lines) + "\n"

