"""Which rule computed a result's figures whose definition changed within schema version 1.

A figure's rule can change without its key (``memory.avg_bytes`` has kept its name through
every rule), and ``edgeprof_version`` stayed 0.1.0 through them, so nothing in an older file
said which rule had made it: ``compare`` of a 7f83ae4 baseline against runs of today read
"avg memory +233.1% ± 119.8% regression" (exit 3) for unchanged code, the old runs' averages
0.2 to 19.1 MiB (first sample to last) against 19.5 to 26.8 MiB (spawn to exit).  A result
now records each such rule's revision (:class:`Rules`); a file without it was made by an
older rule, revision 1 (:data:`OLDER`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .memory import known_fields


@dataclass(frozen=True)
class Rules:
    """The revision of each rule a result's figures were computed by; 1: an older edgeprof's,
    which did not record it (every file before this key)."""

    avg_memory: int = 1
    """``memory.avg_bytes`` and ``memory.avg_working_set_bytes``: 1, the time-weighted
    average of the sampler's readings from the first to the last (older files); 2, from the
    spawn to the main process's exit, the readings taken at the workload's phase events
    counted with the samples."""
    sampled_maxima: int = 1
    """The sampled maxima (``memory.peak_working_set_bytes``, ``peaks``, ``floor_bytes``,
    ``at_peak``, and ``peak_bytes`` where ``peak_source`` is not ``kernel``): 1, over readings
    that could count the start reading (at exec) or those after the main process's exit
    (older files); 2, over one set of readings, those after the start reading up to the exit
    (the ones after it only where none fell between)."""

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> Rules:
        """``None`` (no ``rules`` key): an older edgeprof's file, every rule revision 1."""
        return OLDER if d is None else cls(**known_fields(cls, d))


OLDER = Rules()
"""The rules of a file that records none: an older edgeprof's."""

CURRENT = Rules(avg_memory=2, sampled_maxima=2)
"""The rules this edgeprof computes by: what every result it makes records."""
