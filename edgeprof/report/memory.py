"""A run's memory in words: what its peak was made of, and what its limit cost it."""

from __future__ import annotations

from ..model import MemoryParts, MemoryPressure
from ..units import format_binary


def _mib(n: int | None) -> str:
    return "n/a" if n is None else f"{n / 2**20:.1f}"


def composition(parts: MemoryParts | None, peak: int | None) -> str | None:
    """``peak 184.1MiB = anon 55.7 + file 128.0 + kernel 0.2 MiB`` (shmem when there is
    any), the parts as at the sample of highest usage; ``None`` without a composition."""
    if parts is None or peak is None:
        return None
    terms = [f"anon {_mib(parts.anon)}", f"file {_mib(parts.file)}"]
    if parts.shmem:
        terms.append(f"shmem {_mib(parts.shmem)}")
    terms.append(f"kernel {_mib(parts.kernel)}")
    return f"peak {format_binary(peak)} = " + " + ".join(terms) + " MiB"


def cost(p: MemoryPressure | None) -> str | None:
    """``stalled 0.012s, refaults 0, major faults 3, reclaimed 1520 pages, OOM events 0``:
    what the kernel reports of it (cgroup v1 has no stall figure)."""
    if p is None:
        return None
    parts = []
    if p.stall_some_s is not None:
        parts.append(f"stalled {p.stall_some_s:.3f}s")
    if p.refaults_anon is not None or p.refaults_file is not None:
        parts.append(f"refaults {(p.refaults_anon or 0) + (p.refaults_file or 0)}")
    if p.major_faults is not None:
        parts.append(f"major faults {p.major_faults}")
    if p.reclaimed is not None:
        parts.append(f"reclaimed {p.reclaimed} pages")
    if p.events_oom is not None:
        parts.append(f"OOM events {p.events_oom}")
    return ", ".join(parts) or None
