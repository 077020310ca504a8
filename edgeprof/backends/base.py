"""The backend interface: two abstract base classes and the typed capabilities they carry.

A backend launches a command under :class:`~edgeprof.model.Limits` and exposes raw cumulative
counters; it does no arithmetic on them.  The runner drives every backend the same way::

    backend.check()
    with backend.launch(spec) as run:      # spawned; run.started is the spawn instant
        run.wait(timeout)                  # main process reaped → exit status
        run.kill()                         # what is left of the tree
        run.counters()                     # final totals, after the kill
    # __exit__ → run.close(): group / container removed (idempotent)

Why base classes rather than Protocols probed with ``getattr``: the optional capabilities
below are attributes and properties *with defaults* on :class:`Backend` and
:class:`RunHandle`, so mypy sees every one of them, the runner reads them directly, and a
renamed capability is a type error instead of a feature that silently turns off.

Optional capabilities (override the default where the backend has them):

* ``Backend.runs_on_host`` (default True): False when the command lives in an image, so the
  runner does not look for it on this host.
* ``Backend.leases_cores`` (default: ``runs_on_host``): the CPUs of ``available_cpus()``
  are this host's, shared with its other runs, so a pinned run leases them
  (:mod:`edgeprof.measure.leases`).
* ``Backend.image`` (default None): the default container image.
* ``Backend.accepts_events_fifo`` (default False): a FIFO on this host can be bind-mounted
  into the workload's container for its events.
* ``Backend.cleanup_scope()`` (default: nothing): a :class:`CleanupScope` naming the cgroup
  hierarchies the backend creates run groups in and the Docker client it uses, for the
  collection of dead runs' leftovers before each run (:mod:`edgeprof.measure.gc` drives it;
  no backend calls back into it).
* ``Backend.limit_unavailable(limits)`` (default: every limit can be held): why a limit
  cannot be enforced here, so it is refused before any run instead of faked.
* ``Backend.page_size()`` (default: this kernel's where ``runs_on_host``, else None): the
  page the run's kernel keeps a memory limit in, so the result records the limit it holds.
* ``Backend.peak_source`` (default ``kernel``): what the final ``Counters.memory_peak`` is.
* ``RunHandle.batch_reader`` (default None): a :class:`BatchReader` whose sampling loop runs
  outside Python.
* ``RunHandle.peak_reset`` (default None): a :class:`PeakReset` that restarts the kernel's
  memory high-water mark per phase (:mod:`edgeprof.backends._peak_reset`).  A handle whose
  resets lower the run's own mark (cgroup v1) corrects that in its final ``counters()``.
* ``RunHandle.reclaim`` (default None): a :class:`Reclaim` that squeezes the run's memory
  while it runs (``RunSpec.reclaim``; :mod:`edgeprof.measure.squeeze` drives it), with
  ``Backend.reclaim_unavailable()`` saying why not where it cannot (checked before a run).
* ``RunHandle.task_scan()`` (default: the processes and threads, and per-thread CPU time,
  from ``/proc`` for the pids of ``members()``): override where the run's processes are not
  this host's to read.
* ``RunHandle.stopped()`` (default: the states of ``members()``' processes from ``/proc``):
  every process of the run is stopped now.
* ``RunHandle.mapped_files()`` (default None): a :class:`MappedReading` of the run's
  mapped files against its group's charge (:mod:`edgeprof.backends._mapped`), read by the
  sampler at a coarse cadence.
* ``RunHandle.others_running()`` (default None): how many of the run's processes besides
  its main process are running now, read by the run loop once the main process has exited
  by itself, before ``kill()`` ends them.
* ``RunHandle.limits_now()`` (default None): the limits the run's group has now, read back
  at its end (:class:`LimitReading`), where the workload may have written them.
* ``RunHandle.warnings``: lines about the run's clean-up, read after ``close()``.

Writing an outside backend: subclass :class:`Backend` and :class:`RunHandle`, set ``name``,
implement the abstract methods (mypy and ``abc`` refuse a class that misses one), set
``pid`` and ``started`` and call ``super().__init__()`` in the handle's constructor, and
override only the capabilities it has.  Pass an instance to ``profile(backend=...)`` or
:func:`edgeprof.backends.get_backend`, or register a factory by name with
:func:`edgeprof.backends.register_backend`.  The test suite's scripted backend
(``tests/fakes.py``) is a complete small example.

The capabilities' types are in :mod:`edgeprof.backends.capabilities`; what the host has
(its possible CPUs, its memory, a group's memory ceiling) in
:mod:`edgeprof.backends.host_resources`.
"""

from __future__ import annotations

import abc
import os
from typing import ClassVar, TypeVar

from ..model import Counters, Limits, RunSpec
from ._tasks import TaskScan, all_stopped, scan_tasks
from .capabilities import BatchReader, CleanupScope, LimitReading, MappedReading, PeakReset, Reclaim
from .host_resources import Ceiling, cpus_possible, meminfo_available, meminfo_total

_H = TypeVar("_H", bound="RunHandle")


class RunHandle(abc.ABC):
    """One launched run.  Subclasses set ``pid`` and ``started`` and call
    ``super().__init__()``."""

    pid: int
    started: float
    """``time.monotonic()`` just before the workload's exec, the forked child's own stamp,
    where the backend spawns it (the local backends); else taken immediately before the
    spawn."""

    def __init__(self) -> None:
        self.warnings: list[str] = []
        """What went wrong while releasing the run (a group that would not go); read after
        :meth:`close`."""
        self.ended: float | None = None
        """``time.monotonic()`` of the main process's exit where the backend knows it more
        closely than its reap (Docker's ``State.FinishedAt``; its wait API answers later);
        ``None``: the wall time ends at the reap.  Set by :meth:`wait`."""
        self.before_start: tuple[float, Counters] | None = None
        """(``time.monotonic()``, raw counters) of the run's group read as soon as it could
        be after ``started``, where the group held work that is not the workload's before it
        (Docker: runc init's set-up, in the container's group before it execs the
        workload); ``None``: the group began empty."""
        self.at_exec: tuple[float, Counters] | None = None
        """(``time.monotonic()``, the run's counters) read as soon as the workload's exec had
        succeeded (its spawner's CLOEXEC pipe closing tells edgeprof): the sampler's first
        row, at its own time; ``None``: the sampler's first reading is
        (:func:`~edgeprof.backends._process.take_exec`)."""
        self.spawn_cpu_us: int | None = None
        """CPU time edgeprof's forked child spent inside the run before the exec (µs), on its
        own thread CPU clock, which the result leaves out of the workload's
        (``cpu.spawn_s``); ``None`` where the backend does not spawn the workload itself
        (Docker: runc execs)."""
        self.spawn_s: float | None = None
        """Wall time from the child's joining the run to its stamp just before the exec
        (``cpu.spawn_wall_s``), before ``started``; ``None`` as :attr:`spawn_cpu_us`."""
        self.totals_lost = False
        """The run's group was gone at its final read (Docker's parent group: ENODEV), so
        :meth:`counters` are its last sample's, without the kernel's peak, as a warning of
        the handle's says: the result gives its sampled peak no other reason (it had added
        "cgroup v2 memory.peak needs Linux 5.19", wrong on a 6.x kernel)."""

    # -- optional capabilities ---------------------------------------------------------------

    @property
    def batch_reader(self) -> BatchReader | None:
        """A sampling loop that runs outside Python, or ``None`` (the sampler calls
        :meth:`sample` from its thread)."""
        return None

    @property
    def peak_reset(self) -> PeakReset | None:
        """Restarts the kernel's memory high-water mark per phase, or ``None``."""
        return None

    @property
    def reclaim(self) -> Reclaim | None:
        """Proactive reclaim of the run's memory (``RunSpec.reclaim``), or ``None``."""
        return None

    def members(self) -> list[int] | None:
        """The pids of the run's processes now, as this host's initial PID namespace numbers
        them (NVML's per-process GPU figures are matched to them), or ``None`` where the
        backend cannot list them."""
        return None

    def task_scan(self, times: bool = True) -> TaskScan | None:
        """The run's processes and threads now and, with ``times``, each thread's CPU time
        and run delay (ns) so far (:func:`~edgeprof.backends._tasks.scan_tasks` over
        :meth:`members`), or ``None`` where the backend cannot list the run's processes on
        this host (a remote Docker daemon) or none is left.  Read by the sampler once in a
        while, not at every sample: a many-threaded run costs a file read per thread with
        ``times``, a directory listing per process without."""
        pids = self.members()
        scan = scan_tasks(pids, times=times) if pids else None
        return scan if scan is not None and scan.processes else None

    def stopped(self) -> bool | None:
        """Every process of the run is stopped now (SIGSTOP, or a terminal's SIGTTIN or
        SIGTTOU: a background job that touched it), or ``None`` where the backend cannot
        tell (:func:`~edgeprof.backends._tasks.all_stopped` over :meth:`members`).  Read by
        the run loop about once a second while it waits: a stopped run waits for a
        SIGCONT that may never come, and had looked like a hang."""
        pids = self.members()
        return all_stopped(pids) if pids else None

    def mapped_files(self) -> MappedReading | None:
        """The run's file-backed resident pages against those its group was charged for,
        read now (:mod:`edgeprof.backends._mapped`), or ``None`` where the backend has no
        group of its own to compare (the process backend's peak is resident set size,
        which counts mapped files whoever's cache holds them) or cannot read it now."""
        return None

    def throttled_us(self) -> int | None:
        """The run's cumulative CFS throttled time now (µs), as cheaply as it can be read,
        or ``None`` where it cannot.  Read by the events thread at each reported iteration,
        so that a stall can be attributed to the iterations it lengthened."""
        return None

    def others_running(self) -> int | None:
        """How many of the run's processes other than its main process are running now, or
        ``None`` where the backend cannot tell (Docker: the container's init is the main
        process, and its exit takes its PID namespace with it before the daemon reports
        it).  The run loop reads it once the main process has exited by itself: what
        :meth:`kill` is about to end."""
        return None

    def in_callers_group(self) -> bool:
        """The run's main process is in edgeprof's process group now, so that a signal sent to
        the group (a terminal's Ctrl-C, Ctrl-\\ or hang-up; ``kill -INT -PGID``) reached it as
        well as edgeprof: the run loop then leaves it the grace to end by itself before it
        sends SIGTERM (:func:`~edgeprof.measure.loop.run_loop`).  ``False`` by default: a
        container's processes are in no group of edgeprof's."""
        return False

    def limits_now(self) -> LimitReading | None:
        """The limits the run's group has now (:class:`LimitReading`), read once after the
        kill while the group still exists, or ``None`` where the backend cannot read them
        (or the workload cannot write them: a container's group is read-only inside it)."""
        return None

    # -- the contract ------------------------------------------------------------------------

    @abc.abstractmethod
    def counters(self) -> Counters:
        """Every cumulative counter (read once more after the kill for the totals)."""

    @abc.abstractmethod
    def sample(self) -> Counters:
        """What the time series needs, as cheaply as the backend can (fields only the
        totals use may be ``None``).  Called by the sampler thread at every interval."""

    @abc.abstractmethod
    def wait(self, timeout: float | None) -> int | None:
        """Reap the main process: its status as ``Popen.returncode`` (−N for signal N), or
        ``None`` if it is still running after ``timeout`` seconds."""

    @abc.abstractmethod
    def terminate(self) -> None:
        """Ask every process of the run to stop (SIGTERM); the grace period is the runner's."""

    @abc.abstractmethod
    def kill(self) -> None:
        """SIGKILL the whole tree and return once no process of the run is left."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release everything the run holds (cgroups, fds, containers).  Idempotent."""

    def __enter__(self: _H) -> _H:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Backend(abc.ABC):
    """A way to launch and measure runs; see the module docstring for the capabilities."""

    name: ClassVar[str]
    """``--backend`` name, for the result JSON: ``cgroup``, ``docker``, ``fake``…"""

    runs_on_host: ClassVar[bool] = True
    """False when the command and its working directory are an image's, not this host's."""

    image: str | None = None
    """The default container image (backends that run images)."""

    applies_quota: ClassVar[bool] = True
    """A ``cpus`` limit is a CFS quota (with its period); False where it is whole cores only
    (the process backend's affinity), so a result records no period it never had."""

    @property
    def accepts_events_fifo(self) -> bool:
        """A FIFO on this host can be bind-mounted into the workload's container."""
        return False

    @property
    def leases_cores(self) -> bool:
        """The CPUs of :meth:`available_cpus` are this host's, shared with its other runs:
        a pinned run leases its cores here first."""
        return self.runs_on_host

    @property
    def denies_devices(self) -> bool:
        """The backend denies the run the device files of ``RunSpec.denied_devices`` (cgroup
        v1's devices controller; cgroup v2 would need a BPF program)."""
        return False

    def cleanup_scope(self) -> CleanupScope:
        """Where this backend's dead runs may have left groups or containers."""
        return CleanupScope()

    @property
    def peak_source(self) -> str:
        """What ``Counters.memory_peak`` is, for ``result.memory.peak_source``: ``kernel``
        (a group's high-water mark) unless the backend says otherwise."""
        return "kernel"

    def page_size(self) -> int | None:
        """The page size (bytes) of the kernel that holds this backend's runs' memory limit,
        which it keeps in whole pages (``None``: unknown).  A host backend's: this kernel's."""
        return os.sysconf("SC_PAGESIZE") if self.runs_on_host else None

    def limit_unavailable(self, limits: Limits) -> str | None:
        """Why this backend cannot hold ``limits`` as resolved for the host (``None``: it
        can); checked before any run, so a limit is refused rather than faked."""
        return None

    def reclaim_unavailable(self) -> str | None:
        """Why runs cannot be squeezed by proactive reclaim here (``None``: they can)."""
        return f"the {self.name} backend cannot reclaim a run's memory while it runs"

    def warnings(self) -> list[str]:
        """Features this backend dropped here (e.g. a controller that is not delegated)."""
        return []

    @property
    @abc.abstractmethod
    def mechanism(self) -> str:
        """How it measures, for the result JSON: ``cgroup2``, ``cgroup1``, ``docker+cgroup1``…"""

    @abc.abstractmethod
    def check(self) -> None:
        """Raise :class:`~edgeprof.errors.BackendUnavailable` naming the fix when unusable."""

    @abc.abstractmethod
    def available_cpus(self) -> tuple[int, ...]:
        """CPUs a run may be pinned to (validates ``--cpus`` and ``--cpuset``)."""

    def memory_total(self) -> int | None:
        """Physical memory (bytes) of the machine this backend's runs use, which
        ``--memory`` is checked against; ``None`` if unknown (then nothing is checked).  A
        host backend's runs use this machine: its ``MemTotal``."""
        return meminfo_total() if self.runs_on_host else None

    def possible_cpus(self) -> frozenset[int] | None:
        """The CPUs the machine of this backend's runs can ever have (``None``: unknown), so
        a ``--cpuset`` naming another is refused even under ``--allow-over-host``.  A host
        backend's: this kernel's possible CPUs (:func:`cpus_possible`)."""
        return cpus_possible() if self.runs_on_host else None

    def memory_available(self) -> int | None:
        """Memory (bytes) the machine of this backend's runs can give a run now without
        swapping (``MemAvailable``); ``None`` if unknown.  A host backend's: this one's."""
        return meminfo_available() if self.runs_on_host else None

    def memory_ceilings(self) -> list[Ceiling]:
        """The memory limits of the groups this backend's runs are made under, nearest
        first (:func:`~edgeprof.backends._cgroup_common.ceilings`); none by default."""
        return []

    @abc.abstractmethod
    def launch(self, spec: RunSpec) -> RunHandle: ...
