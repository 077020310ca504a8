"""The data edgeprof passes between its layers: frozen dataclasses, base units only.

Backends produce :class:`Counters` (raw cumulative kernel counters); the sampler turns them
into :class:`Sample` rows and statistics; the runner assembles a :class:`RunResult`
(:mod:`.results`; what the run was asked is :mod:`.spec`; the counters and samples are
:mod:`.counters`), whose memory block (:mod:`.memory`) says what the peak was made of and
what a limit cost, and whose phases, latency and marks (:mod:`.phases`) are what the
workload reported; reports render it.
A value that cannot be measured is ``None`` (``null`` in JSON), never 0.
"""

from .counters import Counters, Sample
from .events import Capped, EventCounts
from .gpu import GpuDevice, GpuPhase, GpuStats
from .host import HostInfo
from .memory import MemoryGrowth, MemoryParts, MemoryPressure, MemoryStats, Squeeze
from .phases import PERCENTILES, LatencyStats, Mark, PhaseStats, Throttling
from .results import (
    SCHEMA_VERSION,
    CoreLease,
    CpuStats,
    IoStats,
    LimitChange,
    RunResult,
    SampleStats,
    Termination,
)
from .rules import Rules
from .spec import STORAGE, Limits, RunSpec, StorageLimit, UserIds

__all__ = [
    "PERCENTILES",
    "SCHEMA_VERSION",
    "STORAGE",
    "Capped",
    "CoreLease",
    "Counters",
    "CpuStats",
    "EventCounts",
    "GpuDevice",
    "GpuPhase",
    "GpuStats",
    "HostInfo",
    "IoStats",
    "LatencyStats",
    "LimitChange",
    "Limits",
    "Mark",
    "MemoryGrowth",
    "MemoryParts",
    "MemoryPressure",
    "MemoryStats",
    "PhaseStats",
    "Rules",
    "RunResult",
    "RunSpec",
    "Sample",
    "SampleStats",
    "Squeeze",
    "StorageLimit",
    "Termination",
    "Throttling",
    "UserIds",
]
