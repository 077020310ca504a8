"""The backend interface.  Protocols, so an outside backend needs no base class.

A backend launches a command under :class:`~edgeprof.model.Limits` and exposes raw cumulative
counters; it does no arithmetic on them.  The runner drives every backend the same way::

    backend.check()
    with backend.launch(spec) as run:      # spawned; run.started is the spawn instant
        run.wait(timeout)                  # main process reaped → exit status
        run.kill()                         # what is left of the tree
        run.counters()                     # final totals, after the kill
    # __exit__ → run.close(): group / container removed (idempotent)

Optional capabilities, looked up with ``getattr`` so a backend without them still works:
``Backend.runs_on_host`` (default True; False when the command lives in an image, so the runner
does not look for it on this host), ``Backend.image`` (the default image), and
``RunHandle.batch_reader`` (a :class:`~edgeprof.measure.sampler.BatchReader` whose sampling
loop runs outside Python), ``RunHandle.peak_reset`` (restarts the kernel's memory high-water
mark per phase: :mod:`edgeprof.backends._peak_reset`) and ``Backend.accepts_events_fifo`` (True
when a FIFO on this host can be bind-mounted into the workload's container for its events), and
``Backend.collect_leftovers()`` (removes what runs whose edgeprof died left behind, before a
run starts; returns a line per removal: :mod:`edgeprof.measure.gc`).
"""

from __future__ import annotations

from typing import ClassVar, Protocol, runtime_checkable

from ..model import Counters, RunSpec


@runtime_checkable
class RunHandle(Protocol):
    pid: int
    started: float
    """``time.monotonic()`` taken immediately before the spawn."""

    def counters(self) -> Counters:
        """Every cumulative counter (read once more after the kill for the totals)."""
        ...

    def sample(self) -> Counters:
        """What the time series needs, as cheaply as the backend can (fields only the
        totals use may be ``None``).  Called by the sampler thread at every interval."""
        ...

    def wait(self, timeout: float | None) -> int | None:
        """Reap the main process: its status as ``Popen.returncode`` (−N for signal N), or
        ``None`` if it is still running after ``timeout`` seconds."""
        ...

    def terminate(self) -> None:
        """Ask every process of the run to stop (SIGTERM); the grace period is the runner's."""
        ...

    def kill(self) -> None:
        """SIGKILL the whole tree and return once no process of the run is left."""
        ...

    def close(self) -> None:
        """Release everything the run holds (cgroups, fds, containers).  Idempotent."""
        ...

    def __enter__(self) -> RunHandle: ...

    def __exit__(self, *exc: object) -> None: ...


@runtime_checkable
class Backend(Protocol):
    name: ClassVar[str]

    @property
    def mechanism(self) -> str:
        """How it measures, for the result JSON: ``cgroup2``, ``cgroup1``, ``docker+cgroup1``…"""
        ...

    def check(self) -> None:
        """Raise :class:`~edgeprof.errors.BackendUnavailable` naming the fix when unusable."""
        ...

    def available_cpus(self) -> tuple[int, ...]:
        """CPUs a run may be pinned to (validates ``--cpus`` and ``--cpuset``)."""
        ...

    def launch(self, spec: RunSpec) -> RunHandle: ...

    def warnings(self) -> list[str]:
        """Features this backend dropped here (e.g. a controller that is not delegated)."""
        ...
