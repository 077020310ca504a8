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
from typing import TextIO

from ..analysis.fit_bounds import MIN_LIMIT, bounds, slack
from ..analysis.fit_times import median_time, spread
from ..analysis.need import (
    DEFAULT_MARGIN,
    DEFAULT_TOLERANCE,
    REPEAT_ON_DOUBT,
    Verdict,
    in_doubt,
    read_back,
    search,
    stall,
    verdict,
)
from ..errors import ConfigError
from ..measure.stdin import one_command
from ..model import STORAGE, Limits, RunResult, Termination
from ..units import named, parse_size, parse_unit_size
from .fit_outcome import FitOutcome, Probe
from .fit_reference import Cap, failed, interrupted_after, reference_cap, succeeded
from .host_checks import check_host, check_setting, open_backend, require_reclaim
from .labels import one_setting, safe_dir
from .request import RunJob, RunRequest, execute, plan_run, stdin_warnings
from .run_options import check_count


class _Interrupted(Exception):
    """The runs were interrupted (Ctrl-C): the search stops with what it has.  Raised for
    the sweep's flag, not a run's termination: a Ctrl-C between two runs ends the sweep with
    every run it made complete (a probe's second batch, made when the first was in doubt,
    had been judged on the first alone and the search gone on)."""

    def __init__(self, runs: list[RunResult]) -> None:
        super().__init__("interrupted")
        self.runs = runs


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


def plan_fit(req: FitRequest) -> tuple[RunJob, int | None]:
    """The checked job (its plan at the unlimited setting) and the ceiling."""
    r = req.run
    _one_setting(r)
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
    # Each run drops the page cache it was charged with: a model file the warm-up read
    # first had been mapped by every later run uncharged, and the limit never held it.
    job = plan_run(dataclasses.replace(r, squeeze=req.one_run, uncache=True))
    if not req.one_run:  # a bisection: a reference and probes, each a run of the command
        job = dataclasses.replace(job, warnings=(*job.warnings, *stdin_warnings()))
    (setting,) = job.plan.limits
    ceiling = setting.memory
    plan = dataclasses.replace(job.plan, limits=(dataclasses.replace(setting, memory=None),))
    return dataclasses.replace(job, plan=plan), ceiling


def _one_setting(r: RunRequest) -> None:
    """A fit is of one setting.  One search per value would make each unlimited run and
    probe again; the answer of one fit without ``--memory`` is the need, which each board's
    memory can be read against."""
    one_setting(
        "fit",
        r.cpus,
        r.memory,
        memory_first="fit once without --memory for the need and read each board's memory "
        "against it",
        storage={s.key: getattr(r, s.key) for s in STORAGE},
    )
    if len(r.cpuset) > 1:
        raise ConfigError("edgeprof fit takes one setting: give --cpuset once")


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
    with one_command():  # every probe of every search reads the same stdin
        return _fit_models(job, ceiling, req, on_step)


def _fit_models(
    job: RunJob, ceiling: int | None, req: FitRequest, on_step: ProbeCallback | None
) -> list[FitOutcome]:
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
            got = done.results
            if not got and done.sweep.stopped is not None and done.sweep.warmups:
                got = done.sweep.warmups[-1:]  # the warm-up failed: the run that says why
            else:
                warmups.extend(done.sweep.warmups)
            if done.sweep.interrupted:
                raise _Interrupted(got)
            return got

        warmups: list[RunResult] = []

        if req.one_run:
            try:
                done = runs(base, 1, "squeezed")
            except _Interrupted as exc:  # its one run says so, or none was made
                done = exc.runs
            return dataclasses.replace(
                _one_run(done, ceiling, req, model, on_step, capped), reference_cap=cap
            )
        n_ref = req.repeat or REFERENCE_RUNS
        # Stopped at a failure: a command that fails without a limit fails in each run.
        try:
            reference = runs(base, n_ref, "reference", REFERENCE_WARMUP, stop_on_failure=True)
            interrupted = False
        except _Interrupted as exc:
            reference, interrupted = exc.runs, True
        label = reference[0].label if reference else (model or "run")
        if on_step is not None:
            on_step(label, None, None, reference)
        # The warm-up's memory counts (only its time is discarded): one more unlimited run
        # for the spread of the floors the allowance takes (fit_bounds.allowance).
        b = bounds(
            reference, ceiling, None if req.resolution is None else parse_size(req.resolution),
            warmups,
        )
        time = median_time(reference)
        noise = spread(reference)
        ref_stall = stall(reference)  # what a probe's memory stalls are judged against
        ref_read = read_back(reference)  # and the pages it read back
        room = slack(b.floor)  # what each run must leave; the bracket adds the floors' spread
        bad = next((r for r in reference if not succeeded(r)), None)
        if bad is not None or not reference or interrupted:
            stopped = "the unlimited run ended: interrupted" if bad is None else failed(
                bad, cap=capped)  # fmt: skip
            return FitOutcome(label, tuple(reference), time, noise, b, (), None,
                              req.tolerance, req.margin, stopped, reference_cap=cap)  # fmt: skip
        probes: list[Probe] = []
        made: list[str] = []  # why each probe was made, kept where one is interrupted

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
                raise _Interrupted(got)
            v = verdict(got, time, reference[-1], req.tolerance, room, ref_stall, ref_read)
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
                raise _Interrupted(got)
            both = (*p.runs, *got)
            v = verdict(both, time, reference[-1], req.tolerance, room, ref_stall, ref_read)
            probes[i] = Probe(limit, both, v)
            if on_step is not None:
                on_step(label, limit, probes[i], list(got))
            return v

        try:
            # An explicit --repeat is the runs per limit the user chose: no more are made.
            found = search(b, probe, confirm if req.repeat is None else None, made)
        except _Interrupted:
            why = interrupted_after([(p.limit, p.verdict) for p in probes])
            return FitOutcome(
                label, tuple(reference), time, noise, b, tuple(probes), None, req.tolerance,
                req.margin, why, reference_cap=cap, made=tuple(made[: len(probes)]),
            )
        return FitOutcome(
            label, tuple(reference), time, noise, b, tuple(probes), found.answer,
            req.tolerance, req.margin, reference_cap=cap, made=found.made,
        )
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
