"""Why a cell has no value of a metric although some of its runs succeeded: the one wording
of a budget's "not measured" (:mod:`.budget_checks`) and ``compare``'s (:mod:`.regression`)."""

from __future__ import annotations

from collections.abc import Sequence

from ..measure.inputs import finer_interval
from ..model import RunResult
from .cells import measured
from .instrumentation import no_events, reported_events
from .metrics import BY_KEY


def why_unmeasured(key: str, runs: Sequence[RunResult], results: Sequence[RunResult]) -> str:
    """Why a cell's ``runs`` (of ``results``), some successful, have no value of the metric
    ``key``: a budget's "not measured" and ``compare``'s (:mod:`edgeprof.analysis.regression`)."""
    ok = measured(runs, key in BY_KEY and BY_KEY[key].per_iteration)
    if key in ("gpu_memory", "energy", "energy_per_item"):
        return _no_gpu(ok)
    if key == "throughput" and ok and all(r.latency is not None for r in ok):
        return "the iterations gave no items (edgeprof.iteration(items=N) counts them)"
    if key in BY_KEY and BY_KEY[key].reported:
        # The iterations' figures (a latency, the throughput): the workload's to report; a
        # p50 budget had been told "the cgroup-v2 backend did not measure it".
        return _no_latency(runs, results)
    if key == "memory_need":
        if runs and all(r.mechanism == "cgroup1" for r in runs):
            # --squeeze is refused there (no proactive reclaim): the way that works named.
            return (
                "the runs were not squeezed, which cgroup v1 cannot do (edgeprof fit "
                "--max-memory-need gates the need there)"
            )
        return "the runs were not squeezed (--squeeze measures the need)"
    if key in ("avg_memory", "peak_memory") and all(r.samples.count > 0 for r in ok):
        interval = ok[0].samples.interval_s
        finer = finer_interval(interval, min(r.wall_s for r in ok))
        # At the finest interval already, no finer one to give (it had been advised to it).
        fix = f"--interval {finer:g} reads them finer" if finer < interval else (
            "runs this short are over before edgeprof's finest interval can read them"
        )
        if any(r.memory.peak_bytes is not None for r in ok):  # so the average only
            return (
                f"fewer than two of each run's readings (every {interval:g}s) fell while it "
                f"ran: {fix}"
            )
        # The process backend's peak where no reading fell while it ran and its process's
        # own high-water mark cannot be told from edgeprof's (`run --backend process -- true`).
        return (
            f"none of each run's readings (every {interval:g}s) fell while it ran, only its "
            f"start and after its exit: {fix}"
        )
    return f"the {ok[0].backend} backend did not measure it"


def _no_gpu(runs: Sequence[RunResult]) -> str:
    """Why a cell has no GPU figure: no GPU was measured (no NVIDIA driver or bindings here,
    ``--gpus none``), or the GPU has no energy counter."""
    if all(r.gpu is None for r in runs):
        return "no GPU was measured: edgeprof doctor lists the GPUs it can read"
    return "the GPU does not give it (edgeprof doctor says what each GPU gives)"


def _no_latency(runs: Sequence[RunResult], results: Sequence[RunResult]) -> str:
    """Why a cell has no latency.  No event in any run of the check is most often a workload
    whose interpreter could not import edgeprof, which :func:`no_events` says with its fix.
    Once another cell reported one, the interpreter imports it and this model's workload just
    reports no iterations: the plain reason."""
    why = None if any(map(reported_events, results)) else no_events(runs)
    return why or "the runs reported no per-iteration latency"
