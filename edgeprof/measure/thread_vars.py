"""What each thread-count variable was for the workload, and an inherited one at odds with
edgeprof's sizing.

edgeprof sets :data:`~.limits.THREAD_VARS` to the CPUs a limited run has, except those the
environment or ``-E`` already holds (:func:`~.limits.thread_env`).  A tester's
``OMP_NUM_THREADS=8 edgeprof run --cpus 1.5`` gave its workload ``OMP_NUM_THREADS=8``
beside ``OPENBLAS_NUM_THREADS=2`` and ``MKL_NUM_THREADS=2``, and the result said
``"env": []``: the pools were silently mixed, and for a multi-threaded model these three
decide the figure.  A count given for one of them (inherited or ``-E``) now sizes those
edgeprof sets (:func:`~.limits.matched_threads`).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..model import Limits
from ..units import counted
from .limits import THREAD_VARS, thread_count


def threads_given(
    env: Mapping[str, str], inherited: Mapping[str, str] | None
) -> dict[str, str | None]:
    """Each thread-count variable as the workload got it: the run's own ``env`` (edgeprof's
    sizing, ``-E``, a device's), else the ``inherited`` environment (a workload on this
    host; ``None`` for a container, whose image's own are not known here); ``None``: unset."""
    return {v: env.get(v, (inherited or {}).get(v)) for v in THREAD_VARS}


def inherited_threads(
    limits: Limits,
    inherited: Mapping[str, str],
    user: Mapping[str, str],
    given: Mapping[str, str | None],
    device: str | None = None,
    replaced: tuple[str, ...] = (),
    device_cores: int | None = None,
) -> list[str]:
    """The warning (one, or none) for the thread-count variables the workload inherited with
    another value than edgeprof sizes to ``limits``, and so kept; none where ``-E`` gave
    them (``user``: asked for) or there is no CPU limit.  ``given``: the three as the
    workload was given them (:func:`threads_given`), which the line lists: edgeprof sets the
    others to the inherited count (:func:`~.limits.matched_threads`).  It had said "the
    workload got 2" of an inherited ``OMP_NUM_THREADS=2`` beside edgeprof's own
    ``MKL_NUM_THREADS=1``, and torch ran 1 thread (a tester's): what a framework makes of
    the variables is its own, so the line says what was given, not what a framework got.
    ``device`` and ``replaced``: the catalog device the limits came from and the options
    that replaced its values, so the share is named as the user gave it; ``device_cores``:
    its cores, where its share is the run's, which size the pools (a 4-core device at speed
    0.25 had been held to ⌈1 CPU⌉: an inherited ``OMP_NUM_THREADS=4``, the device's own count,
    warned of as "not the 1 edgeprof sizes", and ``=1`` not at all)."""
    n = thread_count(limits) if device_cores is None else device_cores
    if n is None:
        return []
    odd = [
        f"{v}={inherited[v]}"
        for v in THREAD_VARS
        if v in inherited and v not in user and inherited[v].strip() != str(n)
    ]
    if not odd:
        return []
    limit = (
        _limit(limits, None if "--cpus" in replaced else device)
        if device_cores is None
        else f"--device {device}'s {counted(device_cores, 'core')}"
    )
    kept = f"{odd[0]} was" if len(odd) == 1 else f"{', '.join(odd)} were"
    shown = {v: given.get(v) for v in THREAD_VARS}
    values = ", ".join(f"{v} unset" if x is None else f"{v}={x}" for v, x in shown.items())
    them = "it" if len(odd) == 1 else "them"
    return [
        f"{kept} inherited from edgeprof's environment and kept, not the {n} edgeprof sizes "
        f"to {limit}: the workload was given {values} (edgeprof sets the ones not given to "
        f"the count given, so that the pools agree); unset {them}, or pass -E with the count "
        "meant"
    ]


def _limit(limits: Limits, device: str | None) -> str:
    """The CPU limit as the user gave it: a ``--device tinyboard`` run had been told of
    "--cpus 0.5", an option never typed (a tester's)."""
    if limits.cpus is not None and device is not None:
        return f"--device {device}'s {limits.cpus:g} CPUs"
    if limits.cpus is not None:
        return f"--cpus {limits.cpus:g}"
    return f"its {len(limits.cpuset or ())} pinned CPUs"
