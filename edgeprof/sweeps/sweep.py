"""Sweeps: every model under every limit setting, several times, in a stable interleaved order.

A *cell* is one model under one limit setting (``RunResult.label``, ``Limits.describe()``); a
sweep runs ``warmup`` discarded rounds and then ``repeat`` measured rounds of every cell.  The
rounds are the outer loop: round 1 runs every cell once, then round 2 …, so a slow drift of
the machine (thermal, page cache, a neighbour's load) hits every model alike instead of
whichever model happened to run last.

The library stays quiet: a caller that wants progress passes ``on_start`` / ``on_result``
callbacks (the CLI renders progress lines with them, a bar among them on a terminal).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import json
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.cells import CellKey, cell_key, ending
from ..backends import Backend, get_backend
from ..dirlock import DirLock
from ..errors import ConfigError, LimitError, OutputReplaced
from ..measure.interrupts import StoppedAfter
from ..measure.limits import allowed_cpus, host_memory, resolve
from ..measure.loop import OUT_FILES
from ..measure.runner import ResultNotSaved, profile
from ..measure.stdin import one_command
from ..model import Limits, RunResult, Termination
from ..outfiles import check_target, remove_files
from ..storage import (
    files_relative_to,
    made_ids,
    missing_dirs,
    prepare_out_dir,
    remove_made,
    write_text_atomic,
)
from .outdir import check_not_a_run, remove_earlier, run_dir, sweep_here
from .plan import AutoRepeat, Step, SweepPlan
from .resume import Resume


@dataclass
class SweepResult:
    plan: SweepPlan
    runs: list[RunResult] = field(default_factory=list)
    """The measured runs, in execution order."""
    warmups: list[RunResult] = field(default_factory=list)
    interrupted: bool = False
    stopped: str | None = None
    """Why the sweep ended before its plan did (``interrupted``, or the error that stopped
    it); ``None`` for one that ran its plan."""
    resumed: tuple[dict[str, Any], ...] = ()
    """``run --resume``: each resumption of the sweep (``at``: when, ``kept``: the runs kept
    from before it; :mod:`.resume`); empty for a sweep made in one go."""
    kept: list[RunResult] = field(default_factory=list)
    """The runs of :attr:`runs` kept from before this resumption (made by an earlier
    ``edgeprof run``)."""
    left_earlier: bool = False
    """Interrupted in its first run, the sweep left the earlier sweep in ``out`` as it was
    (its ``sweep.json``, exports and runs): it wrote no ``sweep.json`` of its own."""

    def to_dict(
        self, run_dicts: Sequence[dict[str, Any]] | None = None, base: Path | None = None
    ) -> dict[str, Any]:
        """``sweep.json``: :data:`~edgeprof.resultfiles.SWEEP_SCHEMA`; ``run_dicts``: the runs'
        ``to_dict()`` made already (:class:`_Checkpoint` keeps them); ``base``: the file's
        directory, which the runs' files are named from (:func:`files_relative_to`)."""
        from ..analysis.sweepfile import sweep_dict

        def as_dict(r: RunResult) -> dict[str, Any]:
            return (r if base is None else files_relative_to(r, base)).to_dict()

        if run_dicts is None and base is not None:
            run_dicts = [as_dict(r) for r in self.runs]

        extra = {
            **self.plan.recorded(),
            **({} if self.plan.workdir is None else {"workdir": self.plan.workdir}),
            # The command line that made the figures (edgeprof's own from the CLI), so that
            # they can be made again; not part of the plan a --resume is held to.
            "argv": list(sys.argv),
            "interrupted": self.interrupted,
            "stopped": self.stopped,
            **({} if self.plan.budgets is None else {"budgets": dict(self.plan.budgets)}),
            **({"resumed": list(self.resumed)} if self.resumed else {}),
            "warmup_runs": [as_dict(r) for r in self.warmups],
        }
        return sweep_dict(self.runs, extra, run_dicts)


class _Checkpoint:
    """``sweep.json`` rewritten while a sweep runs, at a cost that stays a small share of it.

    The file holds every run so far, so writing it after each run made a sweep quadratic: 100
    one-millisecond runs spent 5.1 s of 13.6 s there (each write turned every result into a
    dict again and encoded it).  Each run is encoded once here, into a spool (an unnamed
    temporary file, so nothing is left behind however the sweep ends), and the file is
    rewritten from it after a run only once :data:`MIN_GAP_S` has passed since the last
    write *and* ten times that write's own duration: at most ~10 % of the wall time goes to
    it however long the sweep.  Memory: the encoded runs live in the spool, not here (their
    dicts took ~3.4 KiB a run).  :meth:`close` writes what is still unsaved, after the last
    run, an interruption or an error.  What a SIGKILL loses is at most that gap's runs from
    ``sweep.json``; their ``result.json`` are on disk."""

    MIN_GAP_S = 1.0
    _RUNS = b'\n  "runs": [],\n'
    """Where the runs go in ``sweep.json`` as :func:`json.dumps` lays it out (indent 2)."""
    UNFINISHED = "unfinished: edgeprof had not ended the sweep (still running, or killed)"
    """``stopped`` until :meth:`close` writes the sweep's own: a SIGKILL's file had read as a
    finished sweep (``stopped: null``, 1 run of a plan of 4)."""

    def __init__(self, path: Path, result: SweepResult) -> None:
        import tempfile  # sweeps to a directory only

        self._path = path
        self._result = result
        self._spool = tempfile.TemporaryFile()  # noqa: SIM115 (close() closes it, on every path)
        self._count = 0
        self._next = 0.0  # monotonic time after which a write is due
        self._unsaved = False
        self._written = False  # sweep.json exists: a stop must then be said in it
        self._closing = False
        self.listed = 0
        """The runs the file on disk holds (behind :attr:`_count` until the next write)."""
        self.ended = False
        """The file says how the sweep ended: :meth:`close`'s write succeeded."""

    @property
    def count(self) -> int:
        """The measured runs added so far (kept ones among them)."""
        return self._count

    def add(self, r: RunResult, warmup: bool) -> None:
        if not warmup:
            run = files_relative_to(r, self._path.parent).to_dict()
            text = json.dumps(run, indent=2).replace("\n", "\n    ")
            self._spool.write(((",\n    " if self._count else "    ") + text).encode())
            self._count += 1
        self._unsaved = True
        if time.monotonic() >= self._next:
            self._write()

    @property
    def stale(self) -> bool:
        """The file exists and does not say how the sweep ended (its last write failed)."""
        return self._written and not self.ended

    def discard(self) -> None:
        """Nothing written, and nothing to write (the sweep left an earlier one's file)."""
        self._spool.close()

    def close(self) -> None:
        """The last write: every run, after the last one, an interruption or an error."""
        self._closing = True
        try:
            if self._unsaved or self._written:
                self._write()  # its own ``stopped`` replaces UNFINISHED, though no run is new
        finally:
            self._spool.close()

    def _pieces(self) -> Iterator[bytes]:
        """``sweep.json``: the sweep's own fields, then the spool's runs, then the cells."""
        data = self._result.to_dict([], self._path.parent)
        if not self._closing and data["stopped"] is None:
            data["stopped"] = self.UNFINISHED
        text = (json.dumps(data, indent=2) + "\n").encode()
        head, marker, tail = text.partition(self._RUNS)
        assert marker, "sweep.json's runs are not where they are expected"
        yield head + b'\n  "runs": [\n'
        self._spool.flush()
        self._spool.seek(0)
        while block := self._spool.read(1 << 16):
            yield block
        yield b"\n  ],\n" + tail

    def _write(self) -> None:
        start = time.monotonic()
        try:
            write_text_atomic(self._path, self._pieces())
        except OSError as exc:  # a full disk: one line, not a traceback from the sweep's loop
            # The way on too: a full 1 MiB tmpfs had said only where the results were.
            full = exc.errno in _FULL
            raise ConfigError(
                f"cannot write {self._path}: {exc.strerror or exc}; the sweep stopped there, "
                f"with {self._count} run(s) saved, each result.json in its own directory"
                + (f"; {'free space, then ' if full else ''}run it again with --resume to keep "
                   "them" if self._count else "")
            ) from exc
        self._unsaved = False
        self._written = True
        self.listed, self.ended = self._count, self._closing
        took = time.monotonic() - start
        self._next = start + took + max(self.MIN_GAP_S, 10 * took)


class _Removal:
    """What an earlier sweep left in ``out`` at the names this one writes, removed in two
    steps (:func:`_sweep`), or, resumed, only each re-made run's own files."""

    def __init__(self, out: Path | None, plan: SweepPlan, resumed: bool) -> None:
        self._out, self._plan, self._resumed = out, plan, resumed
        self._first: Path | None = None  # the first run's directory, once it has started
        self._done = out is None or resumed
        # Whether a first run cancelled leaves an earlier sweep as it was.
        self._keeps = out is not None and not self._done and not plan.is_single
        self._keeps = self._keeps and out is not None and sweep_here(out)

    def launched(self, step: Step) -> None:
        """A run's workload has started: its directory's earlier files go (an interrupted
        run's gpu.csv had stayed beside a re-made run that wrote none)."""
        if self._out is None or (self._first is not None and not self._resumed):
            return
        d = run_dir(self._out, self._plan, step)
        self._first = self._first or d
        with contextlib.suppress(OutputReplaced):
            # The workload, already running, swapped the held directory: its run goes on,
            # and its result.json is refused the same way (ResultNotSaved).
            remove_files(d, OUT_FILES)

    def finished(self, r: RunResult) -> bool:
        """A run has finished: after the first, the rest of the earlier sweep goes.  ``False``
        where that run was cancelled and an earlier sweep is kept whole."""
        if self._done or self._out is None:
            return True
        self._done = True
        if r.termination is Termination.INTERRUPTED and self._keeps:
            return False
        skip = () if self._first is None else (self._first,)
        with contextlib.suppress(OutputReplaced):
            remove_earlier(self._out, self._plan, skip)
        return True


def check_limits(
    plan: SweepPlan, backend: Backend, elsewhere: tuple[int, int] | None = None
) -> None:
    """Every limit setting against this host before the first run: a sweep that would fail on
    its third setting must fail before it starts.  ``elsewhere``: the CPUs and bytes of
    memory of the machine the runs will have instead (a recipe's part, sized by its
    engine), not this host's."""
    if elsewhere is None:
        available = allowed_cpus(backend)
        memory, source = host_memory(backend)
        possible = backend.possible_cpus()
    else:  # the part's machine's CPUs are not known here
        available, memory, source = tuple(range(elsewhere[0])), elsewhere[1], "the part's"
        possible = None
    for lim in plan.limits:
        applied, _ = resolve(
            lim,
            available,
            memory=memory,
            allow_over_host=plan.allow_over_host,
            memory_source=source,
            possible=possible,
        )
        refused = backend.limit_unavailable(applied)
        if refused is not None:
            raise LimitError(refused)


def run_sweep(
    plan: SweepPlan,
    *,
    backend: str | Backend = "auto",
    out: Path | None = None,
    on_start: Callable[[Step], None] | None = None,
    on_result: Callable[[Step, RunResult], None] | None = None,
    cgroup_parent: str | None = None,
    profile_options: Mapping[str, Any] | None = None,
    resume: Resume | None = None,
) -> SweepResult:
    """Run ``plan``; ``profile_options`` go to :func:`edgeprof.measure.runner.profile` for every run
    (``interval``, ``timeout``, ``env``, ``cwd``, ``stdout``, ``image`` …).

    With ``out``, each run writes its ``result.json`` and ``samples.csv`` under :func:`run_dir`
    and, for anything more than a single run, ``OUT/sweep.json`` is rewritten (atomically)
    as the sweep goes (:class:`_Checkpoint`: at most once a second and ~10 % of the time) and
    after its last run, an interruption or an error,
    so an interrupted sweep keeps what it measured.
    An interrupted run ends the sweep (``interrupted`` is set); other failures are results.

    ``resume`` (:func:`.resume.earlier_sweep` of ``out``): the finished runs of an earlier,
    interrupted sweep of this plan are kept, in their places, and only the others are made.
    """
    with one_command():  # every run of the sweep reads the same stdin
        return _run_sweep(
            plan, backend, out, on_start, on_result, cgroup_parent, profile_options, resume
        )


def _run_sweep(
    plan: SweepPlan,
    backend: str | Backend,
    out: Path | None,
    on_start: Callable[[Step], None] | None,
    on_result: Callable[[Step, RunResult], None] | None,
    cgroup_parent: str | None,
    profile_options: Mapping[str, Any] | None,
    resume: Resume | None,
) -> SweepResult:
    be = get_backend(backend, cgroup_parent=cgroup_parent)
    check_limits(plan, be)
    if out is None or plan.is_single:
        # A single run's directory is profile()'s to create, after its cores are leased: one
        # refused for busy cores leaves none behind.
        return _sweep(plan, be, out, on_start, on_result, profile_options, None)
    check_not_a_run(out)
    missing = missing_dirs(out)
    prepare_out_dir(out, ("sweep.json",))
    made = made_ids(missing)
    # sweep.json is this sweep's alone.  Refused (another sweep holds the directory), it
    # removes nothing: the directory, made a moment ago, may be the other sweep's already.
    with DirLock(out):
        try:
            for step in plan.steps():  # a link planted in a run's directory: before any run
                for name in OUT_FILES:
                    check_target(run_dir(out, plan, step) / name)
            return _sweep(plan, be, out, on_start, on_result, profile_options, resume)
        except BaseException:
            # A first run that could not start: no file, as for a single run (the deepest
            # first; only while empty).
            remove_made(made)
            raise


def _sweep(
    plan: SweepPlan,
    be: Backend,
    out: Path | None,
    on_start: Callable[[Step], None] | None,
    on_result: Callable[[Step, RunResult], None] | None,
    profile_options: Mapping[str, Any] | None,
    resume: Resume | None,
) -> SweepResult:
    """:func:`run_sweep`'s loop, once its directory is checked and held."""
    opts = dict(profile_options or {})
    result = SweepResult(plan, resumed=() if resume is None else resume.resumed)
    # An earlier sweep's files go in two steps.  The first run's own directory's once its
    # workload has started (it writes its samples.csv there as it goes): a first run that
    # cannot start, or is refused its cores, leaves them as they were.  The rest (sweep.json,
    # the exports, the other runs' files) once that run has finished: a re-run cancelled
    # in its first run had emptied every run directory of an interrupted sweep that
    # --resume could have finished.  Resumed, nothing goes but a re-made run's own files.
    removal = _Removal(out, plan, resume is not None)

    checkpoint = None if out is None or plan.is_single else _Checkpoint(out / "sweep.json", result)
    cell_of: dict[tuple[str | None, Limits], CellKey] = {}  # a step's cell, from its runs
    pending: set[CellKey] = set()  # --repeat auto: the cells the current round runs
    judged = 0  # the round ``pending`` was worked out for
    # Resumed, the warm-ups are made again before the first run made (:mod:`.resume`), and
    # not at all when every measured run is kept.
    warm = resume is None or resume.anything_to_make(plan)
    try:
        for step in plan.steps():
            if step.warmup and not warm:
                continue
            kept = None if resume is None or step.warmup else resume.run_of(step)
            if plan.auto is not None and not step.warmup and step.round > plan.auto.min_runs:
                if step.round != judged:
                    pending, judged = _pending(result.runs, plan.auto), step.round
                if not pending:
                    break
                if cell_of.get((step.label, step.limits)) not in pending:
                    continue
                # Counted without the skipped steps: the progress reads [k/most] with no gaps.
                step = dataclasses.replace(step, index=len(result.runs) + len(result.warmups) + 1)
            if kept is not None:
                result.runs.append(kept)
                result.kept.append(kept)
                cell_of.setdefault((step.label, step.limits), cell_key(kept))
                if checkpoint is not None:
                    checkpoint.add(kept, False)
                continue
            if on_start is not None:
                on_start(step)
            command = [*plan.command, step.model] if step.model is not None else [*plan.command]
            stopping = False
            try:
                r = profile(
                    command,
                    step.limits,
                    backend=be,
                    out_dir=None if out is None else run_dir(out, plan, step),
                    name=step.label,
                    allow_over_host=plan.allow_over_host,
                    on_launch=functools.partial(removal.launched, step),
                    **opts,
                )
            except StoppedAfter as stop:  # a stop signal after its workload ended: kept
                r, stopping = stop.result, True
            # Cancelled in its first run, it leaves an earlier sweep whole: its sweep.json
            # too, which the checkpoint would have replaced with this one run.
            result.left_earlier = not removal.finished(r)
            if result.left_earlier and checkpoint is not None:
                checkpoint.discard()
                checkpoint = None
            (result.warmups if step.warmup else result.runs).append(r)
            if checkpoint is not None:
                checkpoint.add(r, step.warmup)
            cell_of.setdefault((step.label, step.limits), cell_key(r))
            if on_result is not None:
                on_result(step, r)
            if r.termination is Termination.INTERRUPTED or stopping:
                result.interrupted, result.stopped = True, "interrupted"
            elif plan.stop_on_failure and not r.succeeded:
                result.stopped = f"a run failed ({ending(r)})"
            if result.stopped is not None:
                break
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):  # stopped outside a run's wait (its lease)
            result.interrupted, result.stopped = True, "interrupted"
        else:
            result.stopped = f"error: {exc}"
        if checkpoint is not None and not result.left_earlier:
            # A stop between a run's end and its checkpoint (its progress line, a few ms):
            # sweep.json had been left without that run, or not written at all after the
            # first, while runs.csv held it and the sweep said it wrote sweep.json (a user's
            # SIGTERM 0.5-1.6 ms after "run 1:", 5 of 25 tries).
            for missed in result.runs[checkpoint.count :]:
                checkpoint.add(missed, False)
        if checkpoint is not None:
            # The error under way is the one to report.
            with contextlib.suppress(OSError, ConfigError):
                checkpoint.close()
        if isinstance(exc, ResultNotSaved) and not plan.is_single:
            raise _sweep_stopped(exc, plan, result, checkpoint) from exc
        if isinstance(exc, KeyboardInterrupt) and result.runs and not plan.is_single:
            # Stopped between runs (a lease, the checkpoint, the progress): an interrupted
            # sweep as one stopped in a run's wait, its tables and files then written.
            # Raised, a reviewer's SIGTERM had left a 200-run sweep's 87 runs without
            # runs.csv, cells.csv, report.md or --junit, and nothing on stdout.
            return result
        raise
    if checkpoint is not None:
        checkpoint.close()
    return result


def _sweep_stopped(
    exc: ResultNotSaved, plan: SweepPlan, result: SweepResult, checkpoint: _Checkpoint | None
) -> ResultNotSaved:
    """A run's unsaved result as the end of its sweep: how many runs are saved, what
    ``sweep.json`` holds if it could not be rewritten, and the way on (``--resume``).

    A full disk (a 1 MiB tmpfs) had stopped a ``--repeat 3`` sweep at its third run with
    only ``could not be written: No space left on device``: not that 2 runs were saved, nor
    that ``sweep.json``, which the full disk kept from being rewritten, still listed 1 run
    as ``unfinished ... (still running, or killed)``, nor that ``--resume`` keeps the 2."""
    saved = len(result.runs)  # the unsaved run is in none of the lists
    planned = len(plan.measured_steps())
    most = "at most " if plan.auto is not None else ""  # auto: the rounds it may run
    line = f"{exc}; the sweep stopped there, with {saved} of {most}{planned} run(s) saved"
    if checkpoint is not None and checkpoint.stale:
        line += f" (sweep.json could not be rewritten: it lists {checkpoint.listed})"
    if saved:
        full = isinstance(exc.__cause__, OSError) and exc.__cause__.errno in _FULL
        line += f"; {'free space, then ' if full else ''}run it again with --resume to keep them"
    return ResultNotSaved(line, exc.result)


_FULL = (errno.ENOSPC, errno.EDQUOT)
"""A full disk or quota: the cause ``--resume`` needs freed first."""


def _pending(runs: Sequence[RunResult], auto: AutoRepeat) -> set[CellKey]:
    """The cells ``--repeat auto`` runs another round of, each look at the level that keeps
    the plan's looks at 95 % together."""
    from ..analysis.repeats import (  # statistics: only with auto
        look_confidence,
        neighbour_pairs,
        pending_cells,
    )

    level = look_confidence(auto.min_runs, auto.max_runs)
    return pending_cells(neighbour_pairs(runs, auto.target, confidence=level))
