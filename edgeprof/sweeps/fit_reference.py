"""``edgeprof fit``'s unlimited reference runs: the memory limit they are held to (what the
host can give), and why a search has no answer, in one line (a reference that failed, a
search interrupted)."""

from __future__ import annotations

import dataclasses
import signal
from collections.abc import Sequence
from typing import NamedTuple

from ..analysis.cells import described
from ..analysis.fit_bounds import MIN_LIMIT
from ..analysis.need import Verdict
from ..measure.limits import kernel_memory
from ..model import Limits, RunResult, Termination
from ..units import counted, format_binary
from .request import RunJob


class Cap(NamedTuple):
    """The reference runs' memory limit, and what it is, for a message."""

    bytes: int
    source: str


def reference_cap(job: RunJob) -> Cap | None:
    """The memory limit of the reference runs: what the machine of the runs can give now
    (``MemAvailable``), or less where a group the runs are made under has less room under
    its limit (a CI container's).  Past it, the kernel's OOM killer would pick a victim
    among all the host's processes (any of them: edgeprof, a shell, a CI runner), or the
    enclosing group's; at it, a command that outgrows the host is OOM-killed in its own
    group and the search stops with that answer.  Below it nothing changes:
    ``MemAvailable`` counts the page cache the kernel could drop anyway.  ``None`` where the
    backend sets no memory limit (the process backend), the figure is unknown (a remote
    Docker daemon), or below the least limit edgeprof sets."""
    be = job.backend
    if be is None:
        return None
    available = be.memory_available()
    cap = None if available is None else Cap(available, AVAILABLE)
    for c in be.memory_ceilings():
        if c.room is not None and (cap is None or c.room < cap.bytes):
            cap = Cap(c.room, f"all the room left under {c.source} ({format_binary(c.limit)})")
    if cap is None or cap.bytes < MIN_LIMIT:
        return None
    # In whole pages, as the kernel holds it: MemAvailable is in KiB, and a cap in part of
    # a page would be warned of as a --memory limit (rounded_memory) the user never gave.
    cap = cap._replace(bytes=kernel_memory(cap.bytes, be.page_size()))
    return None if be.limit_unavailable(Limits(memory=cap.bytes)) is not None else cap


AVAILABLE = "all the memory this host had available (MemAvailable)"


def setting(r: RunResult) -> str:
    """The setting a reference run was made at, without its :func:`reference_cap`: its
    limits less the memory limit, labelled as every cell's is
    (:func:`edgeprof.analysis.cells.described`: without the cores edgeprof leased it).  Its
    ``Limits.describe()`` had kept them: ``fit --cpus 1`` printed and wrote ``cpus=1,
    cpuset=0``, which a fit whose runs leased core 1 did not match in ``compare``."""
    return described(dataclasses.replace(r.limits, memory=None), r.lease)


def succeeded(r: RunResult) -> bool:
    """The run exited by itself with code 0: the only unlimited run a search starts from.

    A command that fails without a limit (``false``, a script whose import fails, a
    ``sys.exit("…")``) has no memory it "fits" in: bisecting it would answer the size of a
    failure, with exit 0.  A failed probe (a limited run) is judged by
    :func:`~edgeprof.analysis.need.verdict`: with the unlimited run at 0, any other exit
    does not fit (see :func:`fit`)."""
    return r.succeeded


def failed(r: RunResult, which: str = "unlimited", cap: Cap | None = None) -> str:
    """Why there is no search, in one line: ``the unlimited run exited with code 1: …`` (the
    workload's own code, as the exit status of ``fit`` then is), ``… was killed by SIGSEGV:
    …`` (it had said ``ended: signaled``), each with why no limit fits; an OOM kill at
    ``cap``, the reference's :func:`reference_cap`, says that this machine has too
    little; a stop by ``--timeout`` is no failure of the command
    (:func:`stopped_by_timeout`)."""
    if r.termination is Termination.OOM and cap is not None and r.limits.memory == cap.bytes:
        return (
            f"the {which} run was OOM-killed at {format_binary(cap.bytes)}, {cap.source} "
            "when it started: the command needs more than it can have here"
        )
    if r.termination is Termination.INTERRUPTED:
        return f"the {which} run ended: interrupted"
    if r.termination is Termination.TIMEOUT:
        return stopped_by_timeout(r, which)
    if r.termination is Termination.SIGNALED:
        how = f"was killed by {signal_name(r.signal)}"
    elif r.termination is Termination.EXITED:
        how = "exited with " + ("no code" if r.exit_code is None else f"code {r.exit_code}")
    elif r.termination is Termination.OOM:
        how = "was OOM-killed"
    else:
        how = f"ended: {r.termination.value}"
    return (
        f"the {which} run {how}: the command fails without a memory limit, so there is no "
        "limit it fits in"
    )


def stopped_by_timeout(r: RunResult, which: str = "unlimited") -> str:
    """Why a run the user's ``--timeout`` stopped is no reference: the command did not fail,
    it had not ended, and a need is only measured of a command that ends by itself.  It had
    been said to "fail without a memory limit" (``fit --timeout 3`` of a service: the
    timeout is the only way to time-box one), with no way out; it now says what the run
    saw before the stop (``peak 86.1MiB``, and its iterations where it reported them)."""
    seen = [] if r.memory.peak_bytes is None else [f"peak {format_binary(r.memory.peak_bytes)}"]
    if r.latency is not None:
        seen.append(f"{counted(r.latency.count, 'iteration')} completed")
    so_far = f" ({', '.join(seen)})" if seen else ""
    return (
        f"--timeout stopped the {which} run at {r.wall_s:.2f}s{so_far}: fit needs a command "
        "that ends by itself: give it a fixed number of requests/iterations, or raise --timeout"
    )


def signal_name(number: int | None) -> str:
    """``SIGSEGV``; ``signal 70`` for a number Python does not name, ``a signal`` for none."""
    if number is None:
        return "a signal"
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def interrupted_after(probes: Sequence[tuple[int, Verdict]]) -> str:
    """Why a search has no answer after Ctrl-C: how many probes ended (limit, verdict), and
    what they showed (it had said "interrupted" alone after 2 probes)."""
    if not probes:
        return "the search was interrupted before its first probe ended"
    said = f"the search was interrupted after {counted(len(probes), 'probe')}"
    fits = min((limit for limit, v in probes if v.ok), default=None)
    below = [(limit, v) for limit, v in probes if not v.ok and (fits is None or limit < fits)]
    fails = max(below, key=lambda p: p[0], default=None)
    shown = []
    if fits is not None:
        shown.append(f"it fits in {format_binary(fits)}")
    if fails is not None:
        shown.append(f"not in {format_binary(fails[0])} ({fails[1].reason})")
    return said + (f": {', '.join(shown)}" if shown else "") + "; no answer"


