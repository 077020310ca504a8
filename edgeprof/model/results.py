"""A run's result and the data that builds it: frozen dataclasses, base units only.

Backends produce :class:`~.counters.Counters` (raw cumulative kernel counters); the sampler
turns them into :class:`~.counters.Sample` rows (:mod:`.counters`) and statistics; the
runner assembles a :class:`RunResult`; reports render it.  A value that cannot be measured
is ``None`` (``null`` in JSON), never 0.  What the run was asked (its limits, its
:class:`~edgeprof.model.spec.RunSpec`) is :mod:`.spec`; what the workload reported of itself
(phases, iterations' latency, marks) is :mod:`.phases`.
"""

from __future__ import annotations

import dataclasses
import enum
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from ..names import printable
from ..units import format_binary, format_seconds, shown
from .events import EventCounts
from .gpu import GpuStats
from .host import HostInfo
from .jsoncheck import cpu_list, from_json
from .memory import MemoryStats, known_fields
from .origin import EdgeprofOrigin
from .phases import LatencyStats, Mark, PhaseStats
from .rules import CURRENT, Rules
from .spec import STORAGE, Limits

SCHEMA_VERSION = 1
"""Version of the result JSON; bumped on any incompatible change of its keys or units."""


def signal_name(n: int | None) -> str:
    """``SIGSEGV`` for 11; ``signal 99`` for a number this system does not name."""
    try:
        return signal.Signals(n or 0).name
    except ValueError:
        return f"signal {n}"


class Termination(str, enum.Enum):
    """Why the run ended.  Precedence when several apply: interrupted, oom, timeout, signaled."""

    EXITED = "exited"
    SIGNALED = "signaled"
    OOM = "oom"
    TIMEOUT = "timeout"
    INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class CpuStats:
    user_s: float | None
    """User-mode CPU time of the run's tasks: the exact total split by the kernel's
    tick-sampled ratio, in whole microseconds (``None``: not measured, where no tick fell in
    a run whose exact total is not 0, or its CPU time was under 5 scheduler ticks, 20 ms at
    ``CONFIG_HZ=250``: the kernel splits runtime by sampled ticks, ``cputime_adjust`` in
    kernel/sched/cputime.c, so so few split in steps of a fifth or coarser)."""
    system_s: float | None
    """Kernel-mode CPU time (``None`` as :attr:`user_s`)."""
    total_s: float | None
    """All CPU time of the run's tasks, user and system (the group's own counter: cgroup v2
    ``usage_usec``, v1 ``cpuacct.usage``, Docker's ``total_usage``; the process backend's
    sum of its tasks').  Every built-in backend reads it; ``None`` only where no counter was
    read: a Docker run whose group was gone before it could be read (its warning says the
    CPU was not measured), or a custom backend that gives no ``cpu_usage_us``.  A test
    asserting on it may ``assert r.cpu.total_s is not None`` first: that fails on those
    runs alone."""
    avg_pct: float | None
    """100·total CPU time / wall time: percent of one CPU (0 … N·100, as ``docker stats``)."""
    peak_pct: float | None
    """Highest CPU % over any window of ``peak_window_s`` (1 s, ``docker stats``' finest: a run
    shorter than that reports its average)."""
    peak_window_s: float | None
    throttled_s: float | None
    nr_throttled: int | None
    nr_periods: int | None
    period_s: float | None = None
    """The CFS period the ``cpus`` quota was applied with (``None``: no quota, or a file
    older than the choice of period)."""
    wait_s: float | None = None
    """Time some task of the run was runnable but not running (``cpu.pressure``'s ``some``):
    waiting for a CPU another task held, its own threads waiting for each other, or held
    back by the quota.  ``None`` without a per-group pressure file (the process backend,
    Docker on cgroup v1, a kernel without PSI)."""
    held_s: float | None = None
    """Time none of the run's tasks was running while one could (``cpu.pressure``'s
    ``full``): the quota's stalls (``throttled_s``) and other tasks holding its CPUs, not
    its own threads waiting for each other.  ``None`` as :attr:`wait_s`."""
    task_speed_pct: float | None = None
    """The speed (% of one host core) at which half of the run's thread CPU time ran while
    runnable: each thread's CPU time and run delay (waiting for a CPU or the quota's
    refill) read every 0.5 s, its CPU time between two readings put at CPU time over CPU
    time and delay, and the CPU-time-weighted median taken: how fast the quota let the
    run's tasks go.  Read for a run under a ``cpus`` quota only; ``None`` without one, where
    the run's threads cannot be read from this host (or without ``schedstat``), before a
    second reading, or in a file older than the figure."""
    spawn_s: float | None = None
    """CPU time subtracted from ``total_s`` and the rates: what edgeprof's forked child spent
    inside the run from its joining to just before the workload's exec, read on its own
    thread CPU clock (none of the workload's).  The exec's teardown of the child's copy of
    edgeprof comes after it and stays in ``total_s``.  ``None`` where edgeprof does not
    spawn the workload itself (Docker) or in an older file (whose ``total_s`` holds it)."""
    spawn_wall_s: float | None = None
    """Wall time from the child's joining the run's group to its stamp just before the exec,
    where the run's ``wall_s`` starts; ``None`` as :attr:`spawn_s`."""


@dataclass(frozen=True)
class IoStats:
    read_bytes: int | None
    write_bytes: int | None
    net_rx_bytes: int | None
    """``None`` when the workload shares the host's network namespace (no per-run figure)."""
    net_tx_bytes: int | None
    write_incomplete: bool = False
    """``write_bytes`` may leave out buffered writes: cgroup v1 charges the group only the
    writes its tasks submit (direct I/O, their own fsync), not the kernel's later writeback
    of the pages they dirtied, and the run's memory held 1 MiB or more of such pages
    (``dirtied_bytes``).  ``false``: less was seen (the figure short by under 1 MiB), cgroup v2
    (which charges the writeback), or an older file."""
    dirtied_bytes: int | None = None
    """Page cache the run dirtied, as its samples saw it (cgroup v1 ``dirty`` +
    ``writeback``: the sum of their rises between samples), a lower bound of its buffered
    writes; ``None`` where it is not read (cgroup v2, the process backend, older files)."""
    stall_s: float | None = None
    """Time some of the run's tasks waited on block I/O (``io.pressure``'s ``some`` total,
    PSI; on a hybrid cgroup v1 host the run's unified group's): a read from storage, a page
    under writeback.  Neither CPU time nor ``cpu.wait_s`` counts it, so it is where a run's
    wall time beyond its CPU time went when storage was slow.  ``None`` without a pressure
    file (a v1-only host, the process backend, Docker on cgroup v1, older files)."""
    stall_full_s: float | None = None
    """Time all of the run's tasks waited on block I/O at once (``io.pressure``'s ``full``):
    none of them could run.  ``None`` as :attr:`stall_s`."""


@dataclass(frozen=True)
class SampleStats:
    count: int
    interval_s: float
    path: str | None
    """``samples.csv``, relative to the directory of the file that records it (``samples.csv``
    in a ``result.json``, ``16/1/samples.csv`` in a ``sweep.json``); ``None``: not written."""


@dataclass(frozen=True)
class CoreLease:
    """The cores a run held for its whole life (:mod:`edgeprof.measure.leases`), so that runs
    pinned at the same time on one host never share a core.

    ``chosen``: edgeprof picked them for an integer ``cpus`` (free ones among the group's
    cpuset and its own affinity), rather than taking an explicit ``cpuset``.
    ``waited_s``: seconds the run waited for other runs to release them (0.0: free at once);
    not part of ``wall_s``, which starts at the spawn."""

    cores: tuple[int, ...]
    waited_s: float
    chosen: bool

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CoreLease:
        return cls(tuple(d["cores"]), d["waited_s"], d["chosen"])


@dataclass(frozen=True)
class LimitChange:
    """A limit of the run's group that was not the one edgeprof set when the run ended: a
    workload running as root can write its own group's files (``memory.max``,
    ``memory.limit_in_bytes``, ``cpu.max``, ``pids.max``, ``io.max``,
    ``blkio.throttle.*_device``).  A tester's ``--memory 64m`` run raised its limit to
    unlimited and peaked at 207.6 MiB, and "fits" had been said of it.

    ``limit``: ``memory_bytes``, ``cpu_quota_us`` (per the run's ``cpu.period_s``, whatever
    period the workload wrote), ``pids``, ``read_bps``, ``write_bps``, ``read_iops`` or
    ``write_iops`` (the loosest rule over the disks the rate was asked on); ``asked`` and
    ``now`` in those units, ``None``: unlimited."""

    limit: str
    asked: int | None
    now: int | None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LimitChange:
        return cls(d["limit"], d["asked"], d["now"])


class Display(NamedTuple):
    """How a result shows itself: the report's renderers of one run.  Reports render, and the
    model may not import them (the layering), so :mod:`edgeprof.report.display` hands them
    over (:func:`install_display`) when it is imported, as ``edgeprof``'s public names
    import it; until then a result's ``str()`` is its short repr and it has no HTML."""

    text: Callable[[RunResult], str]
    """``print(r)``: the text report's table, notes and sections."""
    html: Callable[[RunResult], str]
    """A notebook's cell: the HTML report's tables."""


_DISPLAY: list[Display] = []
"""The renderers installed, at most one (a list: set without a ``global``)."""


def install_display(display: Display) -> None:
    _DISPLAY[:] = [display]


@dataclass(frozen=True, repr=False)
class RunResult:
    """The outcome of one profiled run; ``to_dict()`` is the versioned result JSON.

    Its repr is one line, ``<RunResult infer exited 345.3ms, CPU 45.6%, peak 66.3MiB>``;
    ``str()`` the text report of the run and ``_repr_html_`` the HTML report's tables
    (:class:`Display`): a notebook had shown the dataclass's ~3,000-character repr, for both
    evaluating ``r`` and ``print(r)``.

    Its fields are the result JSON's keys, nested as there (``r.cpu.avg_pct`` is
    ``cpu.avg_pct``), in base units (seconds, bytes, percent of one CPU): docs/results.md
    describes each one, what it measures and when it is ``None``."""

    edgeprof_version: str
    backend: str
    mechanism: str
    host: HostInfo
    command: tuple[str, ...]
    limits: Limits
    started_at: str
    """UTC ISO-8601 timestamp of the spawn."""
    termination: Termination
    exit_code: int | None
    """The workload's exit status; 128+N when killed by signal N (as a shell reports it)."""
    signal: int | None
    wall_s: float
    cpu: CpuStats
    memory: MemoryStats
    io: IoStats
    samples: SampleStats
    pids_peak: int | None = None
    image: str | None = None
    warnings: tuple[str, ...] = ()
    name: str | None = None
    """Label for tables (model name); defaults to the command's program name."""
    schema_version: int = SCHEMA_VERSION
    phases: tuple[PhaseStats, ...] = ()
    """Per-phase figures, in order of first start (see :mod:`edgeprof.workload.instrument`)."""
    latency: LatencyStats | None = None
    """Every iteration the workload reported, whichever phase it was in."""
    marks: tuple[Mark, ...] = ()
    lease: CoreLease | None = None
    """The cores leased for the run; ``None`` when it was not pinned (no or a fractional
    ``cpus`` and no ``cpuset``), on a remote Docker daemon, and in older files."""
    device: str | None = None
    """The catalog device the limits came from (``--device``; ``None``: none, older files)."""
    device_replaced: tuple[str, ...] = ()
    """The options that replaced the ``device``'s values (``--memory``, ``--cpus``,
    ``--cpu-period``); empty: none, and older files (and then not written)."""
    events: EventCounts | None = None
    """What the workload's events channel received and what went past the runner's caps
    (``None``: no channel, and older files)."""
    gpu: GpuStats | None = None
    """The GPUs the run could see, over NVML (:mod:`.gpu`); ``None``: no GPU, no NVML, or
    ``--gpus none``, and older files."""
    target: str | None = None
    """What an ``edgeprof bench`` run measured: its ``FILE.py:FUNC`` or ``MODULE:FUNC`` and
    loader, as ``models/a.py:infer, loader load``.  The label (``infer bs=8``) names neither,
    and ``compare`` pairs runs by label: two files' ``infer`` had been held to each other
    (+5251 %).  ``None``: not a bench's run, and older files."""
    pids_refused: int | None = None
    """Forks and thread starts the kernel refused at the ``pids`` limit during the run (its
    group's ``pids.events``); ``None``: not read (the process backend; older files)."""
    processes_left: int | None = None
    """The run's processes still running when its main process exited by itself, which
    edgeprof then killed; ``None``: not counted (the run timed out or was interrupted, a
    Docker run, whose init's exit takes its PID namespace with it; older files)."""
    env: tuple[str, ...] | None = None
    """The variables the run was given on top of the environment it inherited, as
    ``KEY=VALUE`` in the order given: ``--env``/``-E`` (``profile(env=...)``), and a
    ``--device``'s thread-pool sizes.  Not what edgeprof sets itself (the thread-count
    variables sized to ``cpus``, its events channel), which follows from the limits.  Two
    benches of one target under ``-E THREADS=1`` and ``-E THREADS=2`` had been read as 2
    repeats of one cell ("within noise"): nothing in the result told them apart.  ``()``:
    none given; ``None``: not recorded (files from before it was)."""

    processes_at_peak: int | None = None
    """The run's processes (not threads) at the scan of its tasks that found the most
    threads, every 0.5 s while it ran with a CPU limit: what ``pids_peak`` was made of, one
    thread each or threads of a few processes (the "more threads than CPUs" warning's
    advice follows it: a fork bomb's 32 processes had been told to set onnxruntime's thread
    count).  ``None``: not scanned (no CPU limit, a remote Docker daemon, older files)."""

    busy_tasks_peak: int | None = None
    """The most of the run's threads that wanted a CPU at once: between two scans of its
    tasks (every 0.5 s), those runnable (running, or waiting for a CPU or the quota's
    refill) at least half the span (:data:`~edgeprof.measure.sampler.BUSY_SHARE`).  What
    the "waited for each other" warning counts against the CPUs: ``pids_peak`` counts idle
    threads too, and a torch script that set 4 threads on a 4-core board (7 tasks, 3 of
    them idle) had been told to set 4 threads (a user's).  ``None``: fewer than two scans,
    no run delay read (no ``schedstat``), or as :attr:`processes_at_peak`."""
    limits_changed: tuple[LimitChange, ...] = ()
    """The group's limits that the workload changed (:class:`LimitChange`), read at the run's
    end: ``limits`` stays what edgeprof set, and the run has no verdict against a changed
    memory limit.  Empty: none changed, or not read (not written then; older files)."""

    workdir: str | None = None
    """The directory the workload started in (absolute; in a container, the path there where
    edgeprof set one): a script named by a relative path is read from it.  ``report`` run
    elsewhere had read an env.template's ``SCRIPT`` from its own directory, found none, and
    told a plain script that its python "could not import" edgeprof.  ``None``: a container
    started in its image's own directory, and older files."""
    rules: Rules = CURRENT
    """The rule each figure whose definition changed within schema version 1 was computed by
    (:mod:`.rules`): ``compare``, ``--resume`` and ``report`` weigh no figure of one rule
    against another's.  An older file, without the key, reads as :data:`~.rules.OLDER`."""
    thread_vars: Mapping[str, str | None] | None = dataclasses.field(default=None, hash=False)
    """Each thread-count variable (``OMP_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``,
    ``MKL_NUM_THREADS``) as the workload got it (:mod:`edgeprof.measure.thread_vars`);
    ``null`` in it: unset; ``None``: older files."""
    edgeprof_origin: EdgeprofOrigin | None = None
    """The code that wrote the file (:class:`~.origin.EdgeprofOrigin`); ``None``: older files."""

    @property
    def label(self) -> str:
        """``name``, else the program's file name, its control characters escaped (a file
        name may hold them; ``name`` may not: :mod:`.jsoncheck`)."""
        return self.name or (printable(Path(self.command[0]).name) if self.command else "?")

    @property
    def succeeded(self) -> bool:
        """The run exited by itself with code 0: the only kind whose figures describe the
        workload's whole work."""
        return self.termination is Termination.EXITED and self.exit_code == 0

    @property
    def end(self) -> str:
        """How the run ended, with its exit code when not 0: ``exited (1)``, ``oom``; a signal
        that ended it by itself is named beside the code, ``signaled (SIGSEGV, 139)``: a bare
        "signaled (137)" read as an OOM kill, and 139 and 134 had to be decoded (a
        tester's)."""
        end = self.termination.value
        if self.exit_code not in (None, 0):
            named = self.termination is Termination.SIGNALED and self.signal is not None
            end += f" ({signal_name(self.signal)}, " if named else " ("
            end += f"{self.exit_code})"
        return end

    def __repr__(self) -> str:
        cpu = "n/a" if self.cpu.avg_pct is None else f"{self.cpu.avg_pct:.1f}%"
        return (
            f"<RunResult {self.label} {self.end} {format_seconds(self.wall_s)}, "
            f"CPU {cpu}, peak {format_binary(self.memory.peak_bytes)}>"
        )

    def __str__(self) -> str:
        return _DISPLAY[0].text(self) if _DISPLAY else repr(self)

    def _repr_html_(self) -> str | None:
        """IPython's rich display; ``None``: none (IPython then shows the repr)."""
        return _DISPLAY[0].html(self) if _DISPLAY else None

    def to_dict(self) -> dict[str, Any]:
        """The result JSON (``result.json``, ``run --json``): plain dicts, lists and numbers,
        ``termination`` as its string; the shipped ``result.schema.json`` describes it and
        :meth:`from_dict` reads it back equal."""
        d = dataclasses.asdict(self)
        d["termination"] = self.termination.value
        d["command"] = list(self.command)
        d["limits"] = {
            "cpus": self.limits.cpus,
            "cpuset": None if self.limits.cpuset is None else list(self.limits.cpuset),
            "memory_bytes": self.limits.memory,
            "pids": self.limits.pids,
            "cpu_period_us": self.limits.cpu_period_us,
            **{s.key: getattr(self.limits, s.key) for s in STORAGE},
        }
        d["warnings"] = list(self.warnings)
        d["device_replaced"] = list(self.device_replaced)
        d["env"] = None if self.env is None else list(self.env)
        d["limits_changed"] = [dataclasses.asdict(c) for c in self.limits_changed]
        if not self.limits_changed:
            del d["limits_changed"]  # written only where a limit changed, as device_replaced
        if not self.device_replaced:
            # Written only where an option replaced a device's value: a result without one
            # reads as before (older files have none), and so does its JSON.
            del d["device_replaced"]
        order = [
            "schema_version",
            "edgeprof_version",
            "edgeprof_origin",
            "name",
            "backend",
            "mechanism",
            "host",
            "command",
            "image",
            "limits",
            "started_at",
            "termination",
            "exit_code",
            "signal",
            "wall_s",
            "cpu",
            "memory",
            "io",
            "pids_peak",
            "samples",
            "warnings",
        ]
        out = {k: d[k] for k in order}
        # Keys of later additions follow the original order (files stay diff-friendly).
        out.update({k: v for k, v in d.items() if k not in out})
        out["phases"] = [dataclasses.asdict(p) for p in self.phases]
        out["marks"] = [dataclasses.asdict(m) for m in self.marks]
        if self.lease is not None:
            out["lease"] = {**d["lease"], "cores": list(self.lease.cores)}
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunResult:
        """Read back a result JSON written by :meth:`to_dict` (same schema version); any other
        content is one :class:`~edgeprof.errors.ConfigError` naming the key (:mod:`.jsoncheck`)."""
        version = d.get("schema_version") if isinstance(d, Mapping) else None
        if version != SCHEMA_VERSION or isinstance(version, bool):
            from ..errors import ConfigError

            if isinstance(d, Mapping) and version is None and isinstance(d.get("runs"), list):
                # A sweep.json's dict: "unsupported result schema_version None" had not said
                # what the file is, nor where its runs are.
                what = shown(d.get("schema", "sweep.json"))
                raise ConfigError(
                    f"this is a sweep file ({what}), not a result: its runs are under "
                    '"runs" (RunResult.from_dict(d["runs"][i])); edgeprof.load(path) reads '
                    "the whole file"
                )
            if isinstance(d, list):
                raise ConfigError(
                    f"this is a list of {len(d)} results, not one: RunResult.from_dict each; "
                    "edgeprof.load(path) reads the whole file"
                )
            raise ConfigError(
                f"unsupported result schema_version {shown(version)} "
                f"(this edgeprof reads {SCHEMA_VERSION})"
            )
        return from_json(cls, d, cls._from_checked)

    @classmethod
    def _from_checked(cls, d: Mapping[str, Any]) -> RunResult:
        lim = d["limits"]
        return cls(
            edgeprof_version=d["edgeprof_version"],
            backend=d["backend"],
            mechanism=d["mechanism"],
            host=HostInfo(**known_fields(HostInfo, d["host"])),
            command=tuple(d["command"]),
            limits=Limits(
                cpus=lim["cpus"],
                cpuset=cpu_list(lim["cpuset"], "limits.cpuset"),
                memory=lim["memory_bytes"],
                pids=lim.get("pids"),
                cpu_period_us=lim.get("cpu_period_us"),
                read_bps=lim.get("read_bps"),
                write_bps=lim.get("write_bps"),
                read_iops=lim.get("read_iops"),
                write_iops=lim.get("write_iops"),
            ),
            started_at=d["started_at"],
            termination=Termination(d["termination"]),
            exit_code=d["exit_code"],
            signal=d["signal"],
            wall_s=d["wall_s"],
            cpu=CpuStats(**known_fields(CpuStats, d["cpu"])),
            memory=MemoryStats.from_dict(d["memory"]),
            io=IoStats(**known_fields(IoStats, d["io"])),
            samples=SampleStats(**known_fields(SampleStats, d["samples"])),
            pids_peak=d.get("pids_peak"),
            image=d.get("image"),
            warnings=tuple(d.get("warnings", ())),
            name=d.get("name"),
            # Absent from files written before edgeprof knew phases: defaults.
            phases=tuple(PhaseStats.from_dict(p) for p in d.get("phases") or ()),
            latency=None if d.get("latency") is None else LatencyStats.from_dict(d["latency"]),
            marks=tuple(Mark.from_dict(m) for m in d.get("marks") or ()),
            lease=None if d.get("lease") is None else CoreLease.from_dict(d["lease"]),
            device=d.get("device"),
            device_replaced=tuple(d.get("device_replaced") or ()),
            events=None if d.get("events") is None else EventCounts.from_dict(d["events"]),
            gpu=None if d.get("gpu") is None else GpuStats.from_dict(d["gpu"]),
            target=d.get("target"),
            pids_refused=d.get("pids_refused"),
            processes_left=d.get("processes_left"),
            processes_at_peak=d.get("processes_at_peak"),
            busy_tasks_peak=d.get("busy_tasks_peak"),
            env=None if d.get("env") is None else tuple(d["env"]),
            workdir=d.get("workdir"),
            rules=Rules.from_dict(d.get("rules")),
            edgeprof_origin=EdgeprofOrigin.from_dict(d.get("edgeprof_origin")),
            thread_vars=None if d.get("thread_vars") is None else dict(d["thread_vars"]),
            limits_changed=tuple(LimitChange.from_dict(c) for c in d.get("limits_changed") or ()),
        )
