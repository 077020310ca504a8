"""The shape of ``fit.json`` (``edgeprof fit``'s answer), as typed dicts: its writer
(:meth:`edgeprof.sweeps.fit_outcome.FitOutcome.to_dict`) returns them, so ``mypy --strict``
holds it to every key and type here, and :func:`edgeprof.model.schema.fit_schema` makes the
published schema (``edgeprof/fit.schema.json``, package data) from them, each key's
description from its docstring.  ``Annotated[T, X]``: written as ``X``'s JSON form (an
enum's value, a dataclass's fields), which the schema gives in full.

    python -m edgeprof.model.schema fit > edgeprof/fit.schema.json
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired, TypedDict

from .memory import MemoryGrowth, MemoryParts, Squeeze
from .results import Termination

FIT_SCHEMA_VERSION = 1
"""``schema_version`` of every fit in ``fit.json``: files written before it was published
have none."""

__all__ = ["FIT_SCHEMA_VERSION", "Fit", "FitProbe", "FitReference", "Fits"]


class FitProbe(TypedDict):
    """One limit the search tried: its runs (a confirmation's join the first) and their
    verdict; the figures of its last run where not said otherwise."""

    limit_bytes: int
    """The memory limit the probe's runs were made under."""
    ok: bool
    """The probe passed: every run completed, none slower than the tolerance allows."""
    verdict: str
    """Why: ``fits``, ``oom``, ``timeout``, ``exit 1 (unlimited: 0)``, ``+35% slower``…"""
    time_s: float
    """The runs' median time, by ``metric`` (wall, or latency p50)."""
    wall_s: list[float]
    """Each run's wall time."""
    termination: Annotated[str, Termination]
    """How the last run ended."""
    exit_code: int | None
    """The last run's exit code (``null``: it did not exit)."""
    stall_s: float | None
    """The runs' median time some task was stalled on memory (PSI ``some``); ``null``: the
    kernel does not count it."""
    refaults: int | None
    """The runs' median count of pages read back soon after they were reclaimed (anonymous
    and file; the lower middle of an even number of runs)."""
    major_faults: int | None
    """The runs' median count of major page faults (a read from disk or swap)."""
    oom_kills: int | None
    """Tasks of the last run the OOM killer ended; ``null``: the backend cannot count them."""


class FitReference(TypedDict):
    """The unlimited (reference) runs, as measured: what the probes are compared with."""

    time_s: float
    """The runs' median time, by ``metric``."""
    noise: float
    """The runs' spread: (max − min) / min of their times (a fraction)."""
    wall_s: list[float]
    """Each run's wall time."""
    termination: Annotated[str, Termination]
    """How the last run ended."""
    exit_code: int | None
    """The last run's exit code (``null``: it did not exit)."""
    peak_bytes: int | None
    """The runs' highest memory peak, as measured (not rounded to pages as the bracket is)."""
    floor_bytes: int | None
    """The runs' highest floor (anon + shmem + kernel) as measured."""
    memory_cap_bytes: int | None
    """The memory limit the runs were made under (``null``: none): what the host had
    available when they started (``MemAvailable``)."""
    at_peak: Annotated[dict[str, Any], MemoryParts] | None
    """The last run's memory by kind at its peak, as ``memory.at_peak`` in ``result.json``."""


class Fit(TypedDict):
    """One model's fit: its reference runs, the search's probes and the answer."""

    schema_version: int
    """The version of this shape (1); files from before it was published have none."""
    name: str
    """The model's label."""
    method: str
    """``bisection`` (limited runs) or ``one-run`` (the reference run was squeezed; its
    ``squeeze.held_bytes`` is the answer)."""
    command: list[str] | None
    """The command as it ran (``null``: interrupted before a run ended)."""
    backend: str | None
    """The backend of the runs."""
    mechanism: str | None
    """How the backend applied the limits."""
    limits: str | None
    """The setting the runs were made at, without a memory limit: ``cpus=1.5, cpuset=0-1``
    or ``none``; the cores edgeprof leased a whole ``cpus`` are not in it (``cpus=1``)."""
    device: str | None
    """The device profile (``--device``); ``null``: none."""
    metric: str
    """What a run is judged by: ``latency p50`` when it reports iterations; else
    ``uncontended wall`` where the kernel tells the time other tasks held it off its CPUs,
    or ``wall``."""
    tolerance: float
    """How much slower than the reference a probe may be and pass (a fraction)."""
    margin: float
    """The headroom added to the answer for ``recommended_bytes`` (a fraction)."""
    reference: FitReference | None
    """The unlimited runs as made (one cut short says ``termination: interrupted``);
    ``null``: interrupted before one was made (in the warm-up, or waiting for cores)."""
    bracket_bytes: list[int]
    """The search's floor and peak, from the unlimited runs (in pages, at least 6 MiB)."""
    searched_bytes: list[int] | None
    """The lowest and highest limits the search ran between; ``null``: no probe was made."""
    ceiling_bytes: int | None
    """The most the device has (``--memory`` or the device's); ``null``: no ceiling."""
    resolution_bytes: int
    """The search stops when the interval is narrower than this."""
    room_bytes: int
    """Room a limit must leave above the floor, since a run's floor is read there."""
    max_probes: int
    """The most probes the search could make."""
    probes: list[FitProbe]
    """Each limit tried, in the order made."""
    min_memory_bytes: int | None
    """The answer: the smallest limit that passed; ``null``: none did, up to the ceiling."""
    recommended_bytes: int | None
    """The answer with ``margin`` added, and above the unlimited peak only as far as the
    margin on the floor and its room reaches."""
    fits: bool | None
    """There is an answer and the device's memory holds it within the ceiling:
    ``device_need_bytes``, with the files mapped elsewhere and ``gpu_bytes``; ``null``: the
    search stopped before an answer (``stopped`` says why)."""
    mapped_elsewhere_bytes: int | None
    """The most files an unlimited run mapped that were cached before it, charged to other
    groups (e.g. shared libraries): in no limit here, its own memory on a device; ``null``:
    too little to say (under 8 MiB), or not measured."""
    device_need_bytes: int | None
    """What the device's memory must hold: ``min_memory_bytes`` + ``mapped_elsewhere_bytes``
    + ``gpu_bytes``, as ``run``'s verdict counts them; ``null``: no answer."""
    fits_with_margin: bool | None
    """Whether ``recommended_bytes``, as the device holds it (with the same files and GPU
    share), is within the ceiling too; ``null``: no ceiling, or it does not fit without."""
    squeeze: Annotated[dict[str, Any], Squeeze] | None
    """The squeezed run's figures (``--one-run``), as ``memory.squeeze`` in ``result.json``;
    ``null``: not squeezed."""
    max_memory_need_bytes: int | None
    """``--max-memory-need`` (``null``: no budget)."""
    gpu_bytes: int | None
    """On a device whose CPU and GPU share one memory, the reference runs' GPU peak (median),
    which the memory holds beside the answer; ``null`` elsewhere."""
    within_budget: bool | None
    """The answer against ``--max-memory-need``; ``null``: no budget, or no search."""
    stopped: str | None
    """Why the search stopped before an answer: the unlimited run did not complete, or the
    search was interrupted (after which probes); ``null``: it ran to its end."""
    contention: str | None
    """Other tasks held the runs off their CPUs (the warning ``run`` gives); ``null``: not."""
    answer_in_doubt: str | None
    """Why the answer may be the host's contention's rather than the limit's: probes that
    failed on their time alone (no refault, major fault or memory stall) while other tasks
    held the runs off their CPUs; ``null``: none did, or there was no contention."""
    memory_growth: NotRequired[Annotated[dict[str, Any], MemoryGrowth] | None]
    """The unlimited runs' memory was still growing at their end (the fastest of them, as
    ``memory.growth`` in ``result.json``): the answer holds for this run's length only, and a
    longer run needs more; ``null``: every one levelled off, or was too short to tell.
    Absent in files written before edgeprof recorded it."""


class Fits(TypedDict):
    """Several models' fits (``fit`` of more than one model); one model's ``fit.json`` is
    its :class:`Fit` itself."""

    fits: list[Fit]
    """One fit per model, in the order given."""
