"""edgeprof: how a model script behaves on an edge device, measured before deployment.

>>> import edgeprof
>>> r = edgeprof.profile(["python3", "infer.py"], edgeprof.Limits(cpus=1.5, memory="512m"))
>>> r.cpu.avg_pct, r.memory.peak_bytes, r.termination
"""

from __future__ import annotations

__version__ = "0.1.0"

from .errors import (
    BackendError,
    BackendUnavailable,
    ConfigError,
    EdgeprofError,
    LaunchError,
    LimitError,
)
from .model import Counters, Limits, RunResult, RunSpec, Sample, Termination
from .runner import profile

__all__ = [
    "BackendError",
    "BackendUnavailable",
    "ConfigError",
    "Counters",
    "EdgeprofError",
    "LaunchError",
    "LimitError",
    "Limits",
    "RunResult",
    "RunSpec",
    "Sample",
    "Termination",
    "__version__",
    "profile",
]
