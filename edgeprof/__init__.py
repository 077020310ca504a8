"""edgeprof: how a model script behaves on an edge device, measured before deployment.

>>> import edgeprof
>>> r = edgeprof.profile(["python3", "infer.py"], edgeprof.Limits(cpus=1.5, memory="512m"))
>>> r.cpu.avg_pct, r.memory.peak_bytes, r.termination

The public API (help(edgeprof.profile) and so on document each name):

- ``profile(command, limits, ...)``: run a command under limits and measure it.
- ``Limits``: CPUs, cores, memory and processes a run may use.
- ``RunResult``: what a run used and how it ended; ``Termination``: how it ended.
- ``CpuStats``, ``MemoryStats``, ``IoStats``, ``GpuStats``, ``PhaseStats``,
  ``LatencyStats``, ``Mark``, ``SampleStats``, ``HostInfo``: the parts of a run's result
  (its cpu, memory, io, gpu, phases, latency, marks, samples and host), for code that
  annotates what it reads.
- ``Counters``, ``Sample``, ``RunSpec``, ``UserIds``: what a backend reads, and is given.
- ``load(*paths)``: the runs of saved results, as ``edgeprof report`` reads them.
- ``compare(baseline, current)``: ``edgeprof compare``'s verdicts, as a ``Comparison`` of
  ``Change`` each (one metric of one cell: its ``Verdict`` and its ``Metric``).
- ``check_budgets(results, budgets)``: ``edgeprof report --budgets``'s checks, as a
  ``Budgeted`` (whether it passed, the checks that failed, each a ``BudgetCheck``; its
  str() the command's lines).
- ``predict(results, calibration)``: a calibration's predictions, as a ``Predicted`` of
  ``Prediction`` each.
- ``to_records(results)``: a dict per run with runs.csv's columns, for pandas.DataFrame.
  A run's str() is its text report and a comparison's its table; in a notebook each shows
  the HTML report's tables.
- ``phase``, ``iteration``, ``mark``: what a workload reports from inside its run;
  ``active()``: whether it runs under edgeprof; ``limit_gpu_memory()``: a device's GPU
  memory held in PyTorch.
- ``Interrupted``: the KeyboardInterrupt that profile() raises at Ctrl-C once the run
  is cleaned up, its ``.result`` the interrupted run.
- ``EdgeprofError``: every error the profiler raises (the workload's functions above
  raise Python's TypeError or ValueError for a bad argument: they import nothing else of
  edgeprof, so that their file runs alone, copied beside a script); ``ConfigError`` (bad
  input), and under
  it ``UnsafeOutput`` (an output through a link, or into a file not edgeprof's),
  ``OutputReplaced`` (of the former: an output directory moved or swapped while
  edgeprof held it; one replaced during a run is the cause of the last below) and
  ``LimitError`` (a limit this host cannot hold), and under that ``CpusOverHost``
  (more CPUs than a run may use here: its .cpus and .available cores) and
  ``CoresBusy`` (leased cores); ``BackendUnavailable``, ``LaunchError``, ``BackendError``,
  ``ResultNotSaved`` (a measured run whose ``result.json`` could not be written).
- ``__version__``.

Only the version is imported with the package: each name loads its module on first use
(the workload's functions :mod:`edgeprof.workload.instrument`, the profiler's its own), so
``import edgeprof`` in a workload is cheap, and the ``edgeprof`` program takes Ctrl-C over
(:func:`edgeprof.cli.entry`) before anything heavy is loaded: a Ctrl-C in the ~6 ms the
package's import took (``typing`` and the instrument module, measured with ``-X
importtime``) had been a 12-line KeyboardInterrupt traceback.
"""

from __future__ import annotations

from .version import __version__

TYPE_CHECKING = False  # typing's own constant, without typing's import (2 ms of the above)
if TYPE_CHECKING:
    from typing import Any

    from .analysis.budget_checks import BudgetCheck
    from .analysis.calibration import Prediction
    from .analysis.change import Change, Verdict
    from .analysis.metrics import Metric
    from .errors import (
        BackendError,
        BackendUnavailable,
        ConfigError,
        CoresBusy,
        CpusOverHost,
        EdgeprofError,
        LaunchError,
        LimitError,
        OutputReplaced,
        UnsafeOutput,
    )
    from .measure.interrupts import Interrupted
    from .measure.runner import ResultNotSaved
    from .model import (
        Counters,
        CpuStats,
        GpuStats,
        HostInfo,
        IoStats,
        LatencyStats,
        Limits,
        Mark,
        MemoryStats,
        PhaseStats,
        RunResult,
        RunSpec,
        Sample,
        SampleStats,
        Termination,
        UserIds,
    )
    from .report.library import (
        Budgeted,
        Comparison,
        Predicted,
        check_budgets,
        compare,
        load,
        predict,
        to_records,
    )
    from .sweeps.library import profile
    from .workload.instrument import active, iteration, limit_gpu_memory, mark, phase

_LAZY = {
    "active": "workload.instrument",
    "iteration": "workload.instrument",
    "limit_gpu_memory": "workload.instrument",
    "mark": "workload.instrument",
    "phase": "workload.instrument",
    "BackendError": "errors",
    "BackendUnavailable": "errors",
    "ConfigError": "errors",
    "CoresBusy": "errors",
    "CpusOverHost": "errors",
    "OutputReplaced": "errors",
    "UnsafeOutput": "errors",
    "EdgeprofError": "errors",
    "LaunchError": "errors",
    "LimitError": "errors",
    "Counters": "model",
    "CpuStats": "model",
    "GpuStats": "model",
    "HostInfo": "model",
    "SampleStats": "model",
    "IoStats": "model",
    "LatencyStats": "model",
    "Mark": "model",
    "MemoryStats": "model",
    "PhaseStats": "model",
    "Limits": "model",
    "RunResult": "model",
    "RunSpec": "model",
    "Sample": "model",
    "Termination": "model",
    "UserIds": "model",
    "Interrupted": "measure.interrupts",
    "ResultNotSaved": "measure.runner",
    "profile": "sweeps.library",
    "Budgeted": "report.library",
    "check_budgets": "report.library",
    "Comparison": "report.library",
    "compare": "report.library",
    "load": "report.library",
    "Predicted": "report.library",
    "predict": "report.library",
    "to_records": "report.library",
    "Prediction": "analysis.calibration",
    "Change": "analysis.change",
    "Verdict": "analysis.change",
    "Metric": "analysis.metrics",
    "BudgetCheck": "analysis.budget_checks",
}

_LIGHT = ("workload.instrument", "errors")
"""The modules of names a workload uses (its phases, edgeprof's errors): they load no
profiler, nor the results' display (:mod:`edgeprof.report.display`)."""

if not TYPE_CHECKING:  # hidden from mypy, which then sees the real imports above

    def __getattr__(name: str) -> Any:
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'edgeprof' has no attribute {name!r}")
        import importlib

        value = getattr(importlib.import_module(f".{module}", __name__), name)
        if module not in _LIGHT:
            # A result shows itself as the reports do (print(r), a notebook's cell): their
            # renderers, handed to the model, which may not import them.
            importlib.import_module(".report.display", __name__)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    """The public names (lazy ones too) and the dunder names Python binds: ``dir(edgeprof)``
    (a notebook's tab completion) had shown none of the lazy ones, then, from the module's
    globals, its machinery beside them (``TYPE_CHECKING``, ``_LAZY``, ``_LIGHT``,
    ``annotations``, the ``version`` submodule), none of it API."""
    dunders = (n for n in globals() if n.startswith("__") and n.endswith("__"))
    return sorted({*dunders, *__all__})


__all__ = [
    "BackendError",
    "BackendUnavailable",
    "BudgetCheck",
    "Budgeted",
    "Change",
    "Comparison",
    "ConfigError",
    "CoresBusy",
    "Counters",
    "CpuStats",
    "CpusOverHost",
    "EdgeprofError",
    "GpuStats",
    "HostInfo",
    "Interrupted",
    "IoStats",
    "LatencyStats",
    "LaunchError",
    "LimitError",
    "Limits",
    "Mark",
    "MemoryStats",
    "Metric",
    "OutputReplaced",
    "PhaseStats",
    "Predicted",
    "Prediction",
    "ResultNotSaved",
    "RunResult",
    "RunSpec",
    "Sample",
    "SampleStats",
    "Termination",
    "UnsafeOutput",
    "UserIds",
    "Verdict",
    "__version__",
    "active",
    "check_budgets",
    "compare",
    "iteration",
    "limit_gpu_memory",
    "load",
    "mark",
    "phase",
    "predict",
    "profile",
    "to_records",
]
