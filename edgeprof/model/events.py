"""What a run's events channel received against what it kept (``result.json``: ``events``).

The runner keeps a bounded amount of what the workload reports
(:mod:`edgeprof.measure.events`: the caps and why); every line past a cap is still counted
here, so the figures say exactly how much a flood left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .memory import known_fields


@dataclass(frozen=True)
class Capped:
    """One kind of event against its cap.

    ``phases``: ``kept`` distinct names, ``over`` the occurrences (``begin`` lines) of names
    past the first ``cap``; ``marks``: ``kept`` marks, ``over`` those past the first ``cap``;
    ``iterations``: ``kept`` durations stored exactly, ``over`` iterations past the first
    ``cap``, which are in every count, sum, minimum, maximum and throughput but reach the
    percentiles only through a sketch (:class:`edgeprof.measure.sketch.Sketch`).
    """

    cap: int
    kept: int
    over: int

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Capped:
        return cls(**known_fields(cls, d))


@dataclass(frozen=True)
class EventCounts:
    """``lines``: every line the workload wrote (over-long ones included, once each; its
    ``waited`` notes on its own writes apart);
    ``malformed``: of them, those ignored as not the protocol."""

    lines: int
    malformed: int
    phases: Capped
    marks: Capped
    iterations: Capped

    @property
    def over(self) -> bool:
        """Whether some kind went past its cap."""
        return any(c.over for c in (self.phases, self.marks, self.iterations))

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> EventCounts:
        return cls(
            lines=d["lines"],
            malformed=d["malformed"],
            phases=Capped.from_dict(d["phases"]),
            marks=Capped.from_dict(d["marks"]),
            iterations=Capped.from_dict(d["iterations"]),
        )
