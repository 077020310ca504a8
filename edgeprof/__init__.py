"""edgeprof: how a model script behaves on an edge device, measured before deployment.

>>> import edgeprof
>>> r = edgeprof.profile(["python3", "infer.py"], edgeprof.Limits(cpus=1.5, memory="512m"))
>>> r.cpu.avg_pct, r.memory.peak_bytes, r.termination

Saved results: ``edgeprof.load(path)`` (the runs ``edgeprof report`` reads),
``edgeprof.compare(baseline, current)`` (``edgeprof compare``'s verdicts) and
``edgeprof.predict(results, calibration)`` (``report --calibration``'s predictions).

Inside a workload, ``edgeprof.phase``, ``edgeprof.iteration`` and ``edgeprof.mark`` (see
:mod:`edgeprof.workload.instrument`).  Only that standard-library module is imported with
the package; the profiler's own modules load on first use, so ``import edgeprof`` in a
workload is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .version import __version__
from .workload.instrument import active, iteration, limit_gpu_memory, mark, phase

if TYPE_CHECKING:
    from .analysis.calibration import Prediction
    from .errors import (
        BackendError,
        BackendUnavailable,
        ConfigError,
        CoresBusy,
        EdgeprofError,
        LaunchError,
        LimitError,
    )
    from .measure.runner import ResultNotSaved
    from .model import Counters, Limits, RunResult, RunSpec, Sample, Termination, UserIds
    from .report.library import Comparison, Predicted, compare, load, predict
    from .sweeps.library import profile

_LAZY = {
    "BackendError": "errors",
    "BackendUnavailable": "errors",
    "ConfigError": "errors",
    "CoresBusy": "errors",
    "EdgeprofError": "errors",
    "LaunchError": "errors",
    "LimitError": "errors",
    "Counters": "model",
    "Limits": "model",
    "RunResult": "model",
    "RunSpec": "model",
    "Sample": "model",
    "Termination": "model",
    "UserIds": "model",
    "ResultNotSaved": "measure.runner",
    "profile": "sweeps.library",
    "Comparison": "report.library",
    "compare": "report.library",
    "load": "report.library",
    "Predicted": "report.library",
    "predict": "report.library",
    "Prediction": "analysis.calibration",
}


if not TYPE_CHECKING:  # hidden from mypy, which then sees the real imports above

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'edgeprof' has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(f".{module}", __name__), name)
        globals()[name] = value
        return value


__all__ = [
    "BackendError",
    "BackendUnavailable",
    "Comparison",
    "ConfigError",
    "CoresBusy",
    "Counters",
    "EdgeprofError",
    "LaunchError",
    "LimitError",
    "Limits",
    "Predicted",
    "Prediction",
    "ResultNotSaved",
    "RunResult",
    "RunSpec",
    "Sample",
    "Termination",
    "UserIds",
    "__version__",
    "active",
    "compare",
    "iteration",
    "limit_gpu_memory",
    "load",
    "mark",
    "phase",
    "predict",
    "profile",
]
