"""``edgeprof fit``: the smallest memory limit a command completes in at the unlimited speed.

The runs go through the same stages as ``edgeprof run`` (:mod:`edgeprof.sweeps.request`):
the request is planned and checked once, then the unlimited reference runs and each probe are
sweeps of one setting.  The search itself is :func:`edgeprof.analysis.need.search`.

The ceiling is the memory the device has: ``--memory`` if given, else the ``--device``'s;
the reference runs without it (with every other limit: CPUs, period, processes), since its
peak and floor bracket the search.  It is held only to what the host can give it
(:func:`reference_cap`), so a command that outgrows the host is a result, not the host's OOM
killer's choice of a victim.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from ..analysis.need import (
    DEFAULT_MARGIN,
    DEFAULT_TOLERANCE,
    MIN_LIMIT,
    REPEAT_ON_DOUBT,
    Bounds,
    Timing,
    Verdict,
    bounds,
    in_doubt,
    max_probes,
    median_time,
    search,
    spread,
    verdict,
    with_margin,
)
from ..errors import ConfigError
from ..model import Limits, RunResult, Termination
from ..units import named, parse_size, parse_unit_size
from .fit_reference import Cap, failed, interrupted_after, reference_cap, setting, succeeded
from .host_checks import check_host, check_setting, open_backend, require_reclaim
from .labels import safe_dir
from .request import RunJob, RunRequest, execute, plan_run
from .run_options import check_count


class _Interrupted(Exception):
    """A probe's run was interrupted (Ctrl-C): the search stops with what it has."""


REFERENCE_RUNS = 2
"""Unlimited runs by default: their median is the speed to keep, their spread the noise."""
REFERENCE_WARMUP = 1
"""A discarded unlimited run first: the first run of a script is slower than the next
(measured: 0.63 s, then 0.45 s, for one that reads a file it evicted itself), and a
reference that includes it would pass probes 14 % slower than the script's real speed."""


@dataclass(frozen=True)
class FitRequest:
    run: RunRequest
    """The command and its setting; ``memory`` (or the device's) is the ceiling."""
    tolerance: float = DEFAULT_TOLERANCE
    resolution: str | None = None
    """A size (``4m``); ``None``: 2 % of the unlimited peak, at least 1 MiB."""
    margin: float = DEFAULT_MARGIN
    repeat: int | None = None
    """Runs per probe and of the reference; ``None``: as the noise needs."""
    one_run: bool = False
    """Estimate from one run squeezed by proactive reclaim (:mod:`edgeprof.measure.squeeze`)
    instead of bisecting with limited runs."""
    max_need: str | None = None
    """``--max-memory-need``: a size the answer must not exceed (a CI gate)."""


@dataclass(frozen=True)
class Probe:
    limit: int
    runs: tuple[RunResult, ...]
    verdict: Verdict

    def to_dict(self) -> dict[str, Any]:
        last = self.runs[-1]
        p = last.memory.pressure
        return {
            "limit_bytes": self.limit,
            "ok": self.verdict.ok,
            "verdict": self.verdict.reason,
            "time_s": median_time(self.runs).seconds,
            "wall_s": [r.wall_s for r in self.runs],
            "termination": last.termination.value,
            "exit_code": last.exit_code,
            "stall_s": None if p is None else p.stall_some_s,
            "refaults": None if p is None else _add(p.refaults_anon, p.refaults_file),
            "major_faults": None if p is None else p.major_faults,
            "oom_kills": last.memory.oom_kills,
        }


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


@dataclass(frozen=True)
class FitOutcome:
    label: str
    reference: tuple[RunResult, ...]
    time: Timing
    """The reference runs' median time (wall, or latency p50)."""
    noise: float
    bounds: Bounds
    probes: tuple[Probe, ...]
    answer: int | None
    """The smallest limit that passed; ``None``: none did, up to the ceiling."""
    tolerance: float
    margin: float
    stopped: str | None = None
    """Why there was no search (the unlimited run did not complete)."""
    method: str = "bisection"
    """``bisection`` (limited runs) or ``one-run`` (the reference run was squeezed; its
    ``memory.squeeze.held_bytes`` is the answer)."""

    budget: int | None = None
    """``--max-memory-need`` in bytes (``None``: no budget)."""
    gpu_bytes: int | None = None
    """On a device whose CPU and GPU share one memory (``unified_memory``), the reference
    runs' GPU peak (median), which the device's memory holds beside the answer; ``None``
    elsewhere."""
    reference_cap: int | None = None
    """The reference runs' memory limit (:func:`reference_cap`); ``None``: none was set."""

    @property
    def device_need(self) -> int | None:
        """What the device's memory must hold: the answer, and the GPU's share of a unified
        memory."""
        return None if self.answer is None else self.answer + (self.gpu_bytes or 0)

    @property
    def failed_at_peak(self) -> Probe | None:
        """Without an answer and no ceiling below the peak, the probe at the unlimited peak,
        which failed: the search probes it only after a failure other than memory
        (:attr:`Verdict.memory`: an exit code, a signal, a timeout), and then the command
        fails under a limit even where the limit takes nothing from it.  (At a ceiling below
        the peak a failure is the ceiling's: it does not fit there.)"""
        b = self.bounds
        if self.answer is not None or self.stopped is not None or b.top < b.peak:
            return None
        # Above the peak (a floor and its room past it): a failure for memory there moved
        # the search higher (need.search), so only another's is the top's to say.
        return next(
            (p for p in self.probes if p.limit == b.top and not p.verdict.ok
             and (b.top == b.peak or not p.verdict.memory)),
            None,
        )

    @property
    def max_probes(self) -> int:
        """The search's bound, one more where a probe failed for a reason other than memory
        and there was no ceiling below the peak: the peak is then probed, not assumed."""
        b = self.bounds
        checked = b.top == b.peak and any(
            not p.verdict.ok and not p.verdict.memory for p in self.probes
        )
        return max_probes(b) + checked

    @property
    def within_budget(self) -> bool | None:
        """The answer against the budget; ``None`` without a budget or a search (stopped).
        No answer (nothing fits the ceiling) is over any budget."""
        if self.budget is None or self.stopped is not None:
            return None
        return self.answer is not None and self.answer <= self.budget

    @property
    def recommended(self) -> int | None:
        return None if self.answer is None else with_margin(self.answer, self.margin)

    @property
    def fits(self) -> bool:
        """An answer, within the ceiling (a bisection's always is; a one-run estimate may
        exceed it)."""
        ceiling = self.bounds.ceiling
        need = self.device_need
        return need is not None and (ceiling is None or need <= ceiling)

    @property
    def measured_peak(self) -> int | None:
        """The unlimited runs' peak as measured (the search's top is at least its smallest
        limit: "peak 6.0MiB = anon 0.0 + …" was ``true``'s 144 KiB)."""
        peaks = [r.memory.peak_bytes for r in self.reference if r.memory.peak_bytes is not None]
        return max(peaks) if peaks else None

    @property
    def measured_floor(self) -> int | None:
        """The unlimited runs' floor as measured (anon + shmem + kernel at its highest)."""
        floors = [r.memory.floor_bytes for r in self.reference if r.memory.floor_bytes is not None]
        return max(floors) if floors else None

    def to_dict(self) -> dict[str, Any]:
        b = self.bounds
        # No reference: interrupted before its first run ended, so nothing of a run to give.
        ref = self.reference[-1] if self.reference else None
        squeeze = None if ref is None else ref.memory.squeeze
        at_peak = None if ref is None else ref.memory.at_peak
        return {
            "name": self.label,
            "method": self.method,
            "command": None if ref is None else list(ref.command),
            "backend": None if ref is None else ref.backend,
            "mechanism": None if ref is None else ref.mechanism,
            "limits": None if ref is None else setting(ref).describe(),
            "device": None if ref is None else ref.device,
            "metric": self.time.metric,
            "tolerance": self.tolerance,
            "margin": self.margin,
            "reference": None
            if ref is None
            else {
                "time_s": self.time.seconds,
                "noise": self.noise,
                "wall_s": [r.wall_s for r in self.reference],
                "termination": ref.termination.value,
                "exit_code": ref.exit_code,
                # As measured: the search's bracket (below) is in pages, at least 6 MiB
                # (fit.json said `true`'s 282624-byte peak was 6291456 bytes).
                "peak_bytes": self.measured_peak,
                "floor_bytes": self.measured_floor,
                "memory_cap_bytes": self.reference_cap,
                "at_peak": None if at_peak is None else dataclasses.asdict(at_peak),
            },
            "bracket_bytes": [b.floor, b.peak],
            "ceiling_bytes": b.ceiling,
            "resolution_bytes": b.resolution,
            "max_probes": self.max_probes,
            "probes": [p.to_dict() for p in self.probes],
            "min_memory_bytes": self.answer,
            "recommended_bytes": self.recommended,
            "fits": self.fits,
            "squeeze": None if squeeze is None else dataclasses.asdict(squeeze),
            "max_memory_need_bytes": self.budget,
            "gpu_bytes": self.gpu_bytes,
            "within_budget": self.within_budget,
            "stopped": self.stopped,
        }


def plan_fit(req: FitRequest) -> tuple[RunJob, int | None]:
    """The checked job (its plan at the unlimited setting) and the ceiling."""
    r = req.run
    if len(r.cpus) > 1 or len(r.memory) > 1 or len(r.cpuset) > 1:
        raise ConfigError("edgeprof fit takes one setting: give --cpus, --cpuset and --memory once")
    if r.repeat != 1 or r.warmup:
        raise ConfigError("edgeprof fit chooses its own runs: use its --repeat, not run's")
    if req.repeat is not None and req.repeat < 1:
        raise ConfigError(f"--repeat {req.repeat}: must be at least 1")
    if req.repeat is not None:
        check_count(req.repeat, "--repeat")
    if req.resolution is not None:
        with named("--resolution"):
            parse_unit_size(req.resolution)
    if req.max_need is not None:
        with named("--max-memory-need"):
            parse_unit_size(req.max_need)
    if req.one_run and (req.repeat is not None or req.resolution is not None):
        raise ConfigError("--one-run makes one run: --repeat and --resolution are bisection's")
    job = plan_run(dataclasses.replace(r, squeeze=req.one_run))
    (setting,) = job.plan.limits
    ceiling = setting.memory
    plan = dataclasses.replace(job.plan, limits=(dataclasses.replace(setting, memory=None),))
    return dataclasses.replace(job, plan=plan), ceiling


def open_fit(
    job: RunJob, log: TextIO, one_run: bool = False, ceiling: int | None = None
) -> RunJob:
    """The host checked and the backend opened, as ``edgeprof run`` does; with ``one_run``,
    a backend that cannot squeeze a run is refused here, before any run.

    So is, before any run, a backend that cannot set a memory limit (the process backend:
    its unlimited runs had all been made, then the first probe was refused, with a
    ``--memory`` never given), and a ceiling ``run --memory`` would refuse (more than the
    host's memory, without ``--allow-over-host``: ``fit --memory 100g`` had said "fits in
    100.0GiB" on a 23.5 GiB host)."""
    job = check_host(job)
    if one_run:
        job = require_reclaim(job, "--one-run", "without --one-run, fit bisects with limited runs")
    job = open_backend(job, log)
    assert job.backend is not None  # a host backend opened by check_host, Docker's here
    why = job.backend.limit_unavailable(Limits(memory=MIN_LIMIT))
    if why is not None:
        # "the process backend cannot limit memory: …", without the option fit was not given
        why = why.removeprefix("--memory: ")
        raise ConfigError(f"edgeprof fit searches with memory limits: {why}")
    if ceiling is not None:
        (unlimited,) = job.plan.limits
        at = dataclasses.replace(unlimited, memory=ceiling)
        check_setting(job, dataclasses.replace(job.plan, limits=(at,)))
    return job


ProbeCallback = Callable[[str, int | None, Probe | None, list[RunResult]], None]
"""Told of each stage: (model label, limit or None for the reference, the probe, runs)."""


def fit(
    job: RunJob,
    ceiling: int | None,
    req: FitRequest,
    *,
    on_step: ProbeCallback | None = None,
) -> list[FitOutcome]:
    """One search per model (or one for the command).

    The search needs an unlimited run that succeeds (exit 0, :func:`succeeded`); one that
    fails is the answer (``stopped``), and ``edgeprof fit`` exits with its code.  A *limited*
    run (a probe) that exits non-zero where the unlimited one exited 0 does not fit at that
    limit, whether or not the kernel counted an OOM kill: a Python ``MemoryError`` caught
    and turned into ``exit 1``, a runtime that checks its cgroup limit and refuses to start,
    or a library that fails to map a file are all the workload failing under that limit,
    and a limit the workload fails under cannot be recommended.  The unlimited run succeeded,
    so the limit is what changed."""
    models = job.plan.models or (None,)
    outcomes = []
    for model in models:
        mjob = job
        if model is not None:
            # One model's plan keeps the label the whole list gave it (fp32/m.onnx, int8/m.onnx).
            one = dataclasses.replace(job.plan, models=(model,), name=job.plan.label(model))
            mjob = dataclasses.replace(job, plan=one)
        outcome = _fit_one(mjob, ceiling, req, model, on_step)
        if job.request.unified_memory:
            outcome = dataclasses.replace(outcome, gpu_bytes=_gpu_peak(outcome.reference))
        if req.max_need is not None:
            outcome = dataclasses.replace(outcome, budget=parse_size(req.max_need))
        outcomes.append(outcome)
    return outcomes


def _gpu_peak(runs: Sequence[RunResult]) -> int | None:
    """The median GPU peak of ``runs`` (``None``: no GPU measured)."""
    peaks = [r.gpu.memory_peak_bytes for r in runs if r.gpu and r.gpu.memory_peak_bytes is not None]
    return None if not peaks else int(statistics.median(peaks))


def _fit_one(
    job: RunJob,
    ceiling: int | None,
    req: FitRequest,
    model: str | None,
    on_step: ProbeCallback | None,
) -> FitOutcome:
    (setting_,) = job.plan.limits
    capped = reference_cap(job)
    cap = None if capped is None else capped.bytes
    base = setting_ if cap is None else dataclasses.replace(setting_, memory=cap)
    out = job.request.out
    if out is not None and model is not None:
        out = out / safe_dir(job.plan.label(model) or "model")
    devnull = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
    try:

        def runs(
            limits: Limits, n: int, where: str, warmup: int = 0, stop_on_failure: bool = False
        ) -> list[RunResult]:
            plan = dataclasses.replace(
                job.plan, limits=(limits,), repeat=n, warmup=warmup, stop_on_failure=stop_on_failure
            )
            request = dataclasses.replace(job.request, out=None if out is None else out / where)
            done = execute(
                dataclasses.replace(job, plan=plan, request=request),
                workload_stdout=devnull,
            )
            if not done.results and done.sweep.stopped is not None and done.sweep.warmups:
                return done.sweep.warmups[-1:]  # the warm-up failed: the run that says why
            warmups.extend(done.sweep.warmups)
            return done.results

        warmups: list[RunResult] = []

        if req.one_run:
            done = runs(base, 1, "squeezed")
            return dataclasses.replace(
                _one_run(done, ceiling, req, model, on_step, capped), reference_cap=cap
            )
        n_ref = req.repeat or REFERENCE_RUNS
        # Stopped at a failure: a command that fails without a limit fails in each run.
        reference = runs(base, n_ref, "reference", REFERENCE_WARMUP, stop_on_failure=True)
        label = reference[0].label if reference else (model or "run")
        if on_step is not None:
            on_step(label, None, None, reference)
        # The warm-up's memory counts (only its time is discarded): one more unlimited run
        # for the spread of the floors the allowance takes (need.allowance).
        b = bounds(
            reference, ceiling, None if req.resolution is None else parse_size(req.resolution),
            warmups,
        )
        time = median_time(reference)
        noise = spread(reference)
        bad = next((r for r in reference if not succeeded(r)), None)
        if bad is not None or not reference:
            stopped = "the unlimited run ended: interrupted" if bad is None else failed(
                bad, cap=capped)  # fmt: skip
            return FitOutcome(label, tuple(reference), time, noise, b, (), None,
                              req.tolerance, req.margin, stopped, reference_cap=cap)  # fmt: skip
        probes: list[Probe] = []

        def probe(limit: int) -> Verdict:
            got = runs(
                dataclasses.replace(setting_, memory=limit),
                req.repeat or 1,
                f"probe-{len(probes) + 1:02d}",
            )
            # A failed run is not in doubt: more runs cannot make its limit fit.
            doubt = all(map(succeeded, got)) and in_doubt(got, time, req.tolerance, noise)
            if req.repeat is None and doubt:
                got += runs(
                    dataclasses.replace(setting_, memory=limit),
                    REPEAT_ON_DOUBT - 1,
                    f"probe-{len(probes) + 1:02d}-again",
                )
            if not got or any(r.termination is Termination.INTERRUPTED for r in got):
                raise _Interrupted
            v = verdict(got, time, reference[-1], req.tolerance, b.allowance)
            p = Probe(limit, tuple(got), v)
            probes.append(p)
            if on_step is not None:
                on_step(label, limit, p, got)
            return v

        def confirm(limit: int) -> Verdict:
            """The answer's probe made up to :data:`REPEAT_ON_DOUBT` runs, all judged: one
            passing run at the floor of ``read_and_hold.py … 48`` had been the answer, and
            5 runs of 9 were OOM-killed at it."""
            i, p = next((i, p) for i, p in enumerate(probes) if p.limit == limit)
            more = REPEAT_ON_DOUBT - len(p.runs)
            if more <= 0:
                return p.verdict
            got = runs(
                dataclasses.replace(setting_, memory=limit), more, f"probe-{i + 1:02d}-confirm"
            )
            if not got or any(r.termination is Termination.INTERRUPTED for r in got):
                raise _Interrupted
            both = (*p.runs, *got)
            v = verdict(both, time, reference[-1], req.tolerance, b.allowance)
            probes[i] = Probe(limit, both, v)
            if on_step is not None:
                on_step(label, limit, probes[i], list(got))
            return v

        try:
            # An explicit --repeat is the runs per limit the user chose: no more are made.
            found = search(b, probe, confirm if req.repeat is None else None)
        except _Interrupted:
            why = interrupted_after([(p.limit, p.verdict) for p in probes])
            return FitOutcome(label, tuple(reference), time, noise, b, tuple(probes), None,
                              req.tolerance, req.margin, why, reference_cap=cap)
        return FitOutcome(label, tuple(reference), time, noise, b, tuple(probes), found.answer,
                          req.tolerance, req.margin, reference_cap=cap)  # fmt: skip
    finally:
        os.close(devnull)


def _one_run(
    done: list[RunResult],
    ceiling: int | None,
    req: FitRequest,
    model: str | None,
    on_step: ProbeCallback | None,
    cap: Cap | None = None,
) -> FitOutcome:
    """The squeezed run's outcome: its held level is the answer (no probes)."""
    label = done[0].label if done else (model or "run")
    if on_step is not None:
        on_step(label, None, None, done)
    b = bounds(done, ceiling, None)
    time = median_time(done)
    r = done[0] if done else None
    if r is None or not succeeded(r) or r.memory.squeeze is None:
        if r is None:
            why = "the squeezed run ended: interrupted"
        else:
            why = (
                "the squeezed run ended: exited" if succeeded(r) else failed(r, "squeezed", cap)
            )
        return FitOutcome(label, tuple(done), time, 0.0, b, (), None, req.tolerance,
                          req.margin, why, "one-run")  # fmt: skip
    return FitOutcome(label, (r,), time, 0.0, b, (), r.memory.squeeze.held_bytes,
                      req.tolerance, req.margin, None, "one-run")  # fmt: skip
