"""Reading and writing cgroupfs files: the only place edgeprof touches them.

Counter files are opened once per run and read with ``pread`` at offset 0, which makes the
kernel regenerate the file's contents: no seek, no reopen, no Python file object in the loop.
A :class:`CounterSet` reads all of a run's files per sample — in one call into the native
helper (``native/cgstat.c``, built by cffi at install) when it is built, else in Python with
``os.pread``; both give identical values.  The files' formats are parsed by pure functions
(:mod:`.cgroup_parse`), so tests can feed them.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..cpu_units import format_cpuset
from ..errors import BackendError
from ..model import Counters
from .cgroup_parse import (
    int_or_none,
    parse_blkio,
    parse_int,
    parse_io_stat,
    parse_kv,
    parse_pids,
    parse_psi,
)

_READ_SIZE = 65536

try:  # built by setup.py's cffi_modules; absent when the compile failed or was skipped
    from . import _cgstat  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - depends on the installation
    _cgstat = None

NATIVE_AVAILABLE = _cgstat is not None
READER = (
    "native helper (cffi, one call per sample)"
    if NATIVE_AVAILABLE
    else "pure-Python os.pread (native helper not built)"
)
"""Which implementation reads the counters (``edgeprof doctor`` prints it)."""


class CounterFile:
    """A cgroup file kept open for repeated reads."""

    __slots__ = ("_fd", "path")

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = os.open(path, os.O_RDONLY | os.O_CLOEXEC)

    def read(self) -> str:
        if self._fd is None:
            raise BackendError(f"counter file {self.path} read after close")
        try:
            return os.pread(self._fd, _READ_SIZE, 0).decode("ascii", "replace")
        except OSError as exc:
            raise BackendError(f"cannot read {self.path}: {exc.strerror}") from exc

    def fileno(self) -> int:
        if self._fd is None:
            raise BackendError(f"counter file {self.path} used after close")
        return self._fd

    def read_int(self) -> int:
        return parse_int(self.read())

    def read_kv(self) -> dict[str, int]:
        return parse_kv(self.read())

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def close_all(files: Iterable[CounterFile]) -> None:
    for f in files:
        f.close()


def open_optional(path: Path) -> CounterFile | None:
    """Open a counter file the kernel may not have (``None`` when it is absent)."""
    try:
        return CounterFile(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BackendError(f"cannot open {path}: {exc.strerror}") from exc


def write(path: Path, value: str) -> None:
    """Write one value to a cgroup control file, translating the kernel's refusal."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, value.encode())
        finally:
            os.close(fd)
    except OSError as exc:
        raise BackendError(f"cannot write {value!r} to {path}: {exc.strerror}") from exc


def write_cpuset(path: Path, cpus: Sequence[int], parent_cpus: str) -> None:
    """Write ``--cpuset``'s CPUs to a run group's ``cpuset.cpus``, saying which option the
    kernel refused: under ``--allow-over-host`` the CPUs are not checked first, and a CPU
    past the kernel's possible ones is ``cpulist_parse``'s ERANGE, which alone read
    "cannot write '5' to …/cpuset.cpus: Numerical result out of range"."""
    value = format_cpuset(cpus)
    try:
        write(path, value)
    except BackendError as exc:
        why = exc.__cause__.strerror if isinstance(exc.__cause__, OSError) else str(exc)
        raise BackendError(
            f"--cpuset {value}: the kernel refused these CPUs for the run's group ({why}); "
            f"its parent group has CPUs {parent_cpus or 'none'}"
        ) from exc


def read_text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise BackendError(f"cannot read {path}: {exc.strerror}") from exc


def read_optional(path: Path) -> str | None:
    """``path``'s text, or ``None`` where the file is not there or its group is being
    removed: a group removed between finding it and reading it answers ENODEV, not ENOENT
    (``kernfs_fop_read_iter``: ``kernfs_get_active`` fails on a deactivated node). A
    container's scope, gone at its end, made a run under Docker's systemd driver exit 2 on
    "cannot read …/cgroup.procs: No such device" in a CI run."""
    try:
        return path.read_text()
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ENODEV:
            return None
        raise BackendError(f"cannot read {path}: {exc.strerror}") from exc


def own_cgroups(proc_self_cgroup: Path = Path("/proc/self/cgroup")) -> dict[str, str]:
    """``/proc/self/cgroup`` → {hierarchy key: path}.

    The key is ``""`` for the unified (v2) hierarchy, else the comma-joined controller list as
    the kernel prints it (``cpu,cpuacct``, ``memory``, ``name=systemd``).
    """
    out: dict[str, str] = {}
    for line in read_text(proc_self_cgroup).splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            out[parts[1]] = parts[2]
    return out


def subgroups(group: Path) -> list[Path]:
    """The groups under ``group``, deepest first: a workload running as root may make its
    own (one that did, and moved itself there, had left 16 directories behind and held
    each removal for its full retry time, 9 s in all)."""
    return [Path(root) / name for root, dirs, _ in os.walk(group, topdown=False) for name in dirs]


FREEZE_FILES = (("freezer.state", "THAWED"), ("cgroup.freeze", "0"))
"""Each freezer's control file and the value that thaws it: cgroup v1's freezer hierarchy,
and cgroup v2's core ``cgroup.freeze`` (in the unified group of a hybrid host too)."""


def thaw_tree(group: Path) -> None:
    """Thaw ``group`` and every group under it, parents first (in v1, a child reads
    ``FROZEN`` while its parent is).

    A frozen process cannot die of SIGKILL: the signal stays pending until a thaw.  A
    workload running as root may freeze its own group or one it made under it: with only
    ``cgroup.kill`` written, such a run had ended in "processes … survived SIGKILL" after
    the 10 s kill timeout, its processes in D state and its 8 groups left frozen (Linux
    6.18, cgroup v1 hybrid).  A group that went away or refuses is left to the caller's
    member check."""
    for root, _, _ in os.walk(group):
        for name, thawed in FREEZE_FILES:
            f = Path(root) / name
            try:
                if f.read_text().strip() == thawed:
                    continue
            except OSError:  # no such freezer here, or the group went away
                continue
            with contextlib.suppress(BackendError):
                write(f, thawed)


def procs_under(procs: Path) -> list[int]:
    """The pids of a ``cgroup.procs`` file's group and of every group under it."""
    pids = parse_pids(read_text(procs))
    for sub in subgroups(procs.parent):
        pids.extend(parse_pids(read_optional(sub / procs.name) or ""))
    return pids


def remove_tree(dirs: Iterable[Path], attempts: int = 200) -> list[str]:
    """rmdir each group (deepest first) with the groups under it, retrying while exiting
    tasks still pin one.

    Returns a message per group that could not be removed (empty list on success).
    """
    import time

    failures = []
    for d in (g for top in dirs for g in [*subgroups(top), top]):
        for i in range(attempts):
            try:
                os.rmdir(d)
                break
            except FileNotFoundError:
                break
            except OSError as exc:
                if exc.errno != errno.EBUSY or i == attempts - 1:
                    failures.append(f"cannot remove cgroup {d}: {exc.strerror}")
                    break
                time.sleep(0.005)
    return failures


class Kind(enum.IntEnum):
    """How a counter file is parsed (same numbers as ``enum cg_kind`` in native/cgstat.h)."""

    INT = 0
    """One integer (``max`` reads as -1)."""
    KV = 1
    """``key value`` lines."""
    IOSTAT = 2
    """cgroup v2 ``io.stat``: rbytes and wbytes summed over devices."""
    BLKIO = 3
    """cgroup v1 ``blkio.*io_service_bytes*``: Read and Write summed over devices."""
    PSI = 4
    """A pressure file (``memory.pressure``): the ``total=`` of its ``some`` and ``full``
    lines (µs)."""


@dataclass(frozen=True)
class Field:
    """One :class:`~edgeprof.model.Counters` field: its name, the key in the file (``KV``),
    and a divisor to base units (cgroup v1 counts CPU in ns; Counters hold µs)."""

    name: str
    key: str | None = None
    divisor: int = 1


CPU_PRESSURE = (Field("cpu_some_us"), Field("cpu_full_us"))
"""``cpu.pressure``'s fields, on either version (a hybrid host's runs read their unified
group's)."""
MEMORY_PRESSURE = (Field("memory_some_us"), Field("memory_full_us"))
"""``memory.pressure``'s fields, on either version, as :data:`CPU_PRESSURE`."""
IO_PRESSURE = (Field("io_some_us"), Field("io_full_us"))
"""``io.pressure``'s fields, on either version, as :data:`CPU_PRESSURE`: time the run waited
on block I/O, which neither ``cpu.pressure`` nor ``memory.pressure`` counts."""
PIDS_EVENTS = (Field("pids_refused", "max"),)
"""``pids.events``' fields, on either version: ``max`` counts the forks and thread starts
refused at ``pids.max`` (a Pool(8) under ``--pids 4`` died of EAGAIN while the sampled peak
read 1 of 4: only this counter keeps a refusal)."""


@dataclass(frozen=True)
class Source:
    """A counter file and the fields it gives.  ``IOSTAT``/``BLKIO`` give (read, write),
    ``PSI`` (some, full).

    ``per_sample=False``: only the final totals need it (high-water mark, OOM count,
    throttling, the user/system split), so the sampling loop does not pay for it.

    ``skip``: for ``IOSTAT``/``BLKIO``, the disks (``MAJ:MIN``) whose lines are left out of
    the sums: those that pass their I/O on to another disk, which counts it again
    (:func:`edgeprof.backends._disks.passed_on`).
    """

    path: Path
    kind: Kind
    fields: tuple[Field, ...]
    per_sample: bool = True
    skip: tuple[str, ...] = ()


_COUNTER_FIELDS = frozenset(Counters._fields)
_PAIRS = frozenset({Kind.IOSTAT, Kind.BLKIO, Kind.PSI})
_MISSING = -(2**63)  # CG_MISSING


class _Plan(Protocol):
    """A fixed set of open counter files read together: :class:`_NativePlan` (one call into
    the helper) or :class:`_PythonPlan` (``os.pread``), which give the same values."""

    def read(self) -> Counters: ...


class CounterSet:
    """A run's counter files, kept open, read together into :class:`Counters`.

    :meth:`read` reads every file (final totals); :meth:`sample` only the per-sample ones.
    Files that do not exist (an older kernel, a controller not enabled) are left out: their
    fields stay ``None``.  ``native=None`` uses the helper when it is built.
    """

    def __init__(self, sources: Sequence[Source], native: bool | None = None) -> None:
        self.sources = tuple(sources)
        self._open: list[tuple[CounterFile, Source]] = []
        for src in sources:
            for f in src.fields:
                if f.name not in _COUNTER_FIELDS:
                    raise ValueError(f"{f.name} is not a Counters field")
            if src.kind in _PAIRS and len(src.fields) != 2:
                # The native parser writes both values of a pair: one field would overrun.
                raise ValueError(f"{src.path}: a {src.kind.name} source gives two fields")
            cf = open_optional(src.path)
            if cf is not None:
                self._open.append((cf, src))
        self.native = NATIVE_AVAILABLE if native is None else native
        if self.native and not NATIVE_AVAILABLE:
            raise BackendError("the native counter reader is not built in this installation")
        every = self._open
        sampled = [(cf, src) for cf, src in self._open if src.per_sample]
        throttling = [
            (cf, src) for cf, src in self._open if any(f.name == "throttled_us" for f in src.fields)
        ]
        self.has_throttling = bool(throttling)
        plan: type[_NativePlan | _PythonPlan] = _NativePlan if self.native else _PythonPlan
        self._full: _Plan = plan(every)
        self._sampled: _Plan = plan(sampled)
        self._throttling: _Plan = plan(throttling)

    def read(self) -> Counters:
        """Every counter (for the final totals)."""
        return self._full.read()

    def sample(self) -> Counters:
        """The counters the time series uses; total-only fields are ``None``."""
        return self._sampled.read()

    def throttling(self) -> Counters:
        """Only the file that holds the CFS throttling counters (``cpu.stat``)."""
        return self._throttling.read()

    @property
    def batch_reader(self) -> _NativePlan | None:
        """The native sampling loop over the per-sample files, when the helper is built."""
        return self._sampled if isinstance(self._sampled, _NativePlan) else None

    def close(self) -> None:
        close_all(cf for cf, _ in self._open)
        self._open = []


class _NativePlan:
    """One ``cg_read`` call over a fixed set of open files."""

    def __init__(self, files: Sequence[tuple[CounterFile, Source]]) -> None:
        ffi, lib = _cgstat.ffi, _cgstat.lib
        self._files = ffi.new("cg_file[]", max(1, len(files)))
        self._keep: list[Any] = []
        slots: list[Field] = []
        for i, (cf, src) in enumerate(files):
            c = self._files[i]
            c.fd, c.kind, c.slot = cf.fileno(), int(src.kind), len(slots)
            # A KV file's keys are the names read; an I/O file's, the disks left out.
            names = [f.key or "" for f in src.fields] if src.kind is Kind.KV else src.skip
            if names:
                keys = [ffi.new("char[]", name.encode()) for name in names]
                arr = ffi.new("char *[]", keys)
                self._keep.extend([keys, arr])
                c.keys, c.nkeys = arr, len(keys)
            slots.extend(src.fields)
        self._nfiles = len(files)
        self._out = ffi.new("long long[]", max(1, len(slots)))
        self._nout = len(slots)
        self._read = lib.cg_read
        # Counters position of each slot, and its divisor.
        self._index = [(Counters._fields.index(f.name), f.divisor) for f in slots]
        self._rows_cap = 0
        self._times: Any = None
        self._rows: Any = None
        self._due = ffi.new("long long *")
        self._missed = ffi.new("long long *")
        self._stopped = ffi.new("int *")

    def sample_batch(
        self, interval: float, due: float, until: float, stop_fd: int
    ) -> tuple[list[tuple[float, Counters]], float, bool, int]:
        """Sample in C every ``interval`` s from ``due`` (monotonic) until ``until`` or until
        ``stop_fd`` is readable.  Returns (rows of (time, Counters), next due, stopped,
        ticks missed).  The GIL is released for the whole loop (cffi API mode)."""
        ffi = _cgstat.ffi
        max_rows = min(100_000, int((until - due) / interval) + 2)
        if self._rows_cap < max_rows:
            self._times = ffi.new("long long[]", max_rows)
            self._rows = ffi.new("long long[]", max_rows * max(1, self._nout))
            self._rows_cap = max_rows
        self._due[0] = int(due * 1e9)
        self._missed[0] = 0
        n = _cgstat.lib.cg_sample(
            self._files,
            self._nfiles,
            self._nout,
            max(1, int(interval * 1e9)),
            self._due,
            int(until * 1e9),
            stop_fd,
            self._times,
            self._rows,
            max_rows,
            self._missed,
            self._stopped,
        )
        if n < 0:
            raise BackendError(f"cannot read cgroup counters: {os.strerror(-n)}")
        out = [(self._times[i] / 1e9, self._make(self._rows, i * self._nout)) for i in range(n)]
        return out, self._due[0] / 1e9, bool(self._stopped[0]), int(self._missed[0])

    def _make(self, buf: Any, base: int) -> Counters:
        values: list[int | None] = [None] * len(Counters._fields)
        for i, (pos, div) in enumerate(self._index):
            v = buf[base + i]
            if v != _MISSING:
                values[pos] = v if div == 1 else v // div
        return Counters._make(values)

    def read(self) -> Counters:
        rc = self._read(self._files, self._nfiles, self._out, self._nout)
        if rc < 0:
            raise BackendError(f"cannot read cgroup counters: {os.strerror(-rc)}")
        return self._make(self._out, 0)


class _PythonPlan:
    """The same reads with ``os.pread`` and the parsers above."""

    def __init__(self, files: Sequence[tuple[CounterFile, Source]]) -> None:
        self._files = files

    def read(self) -> Counters:
        values: dict[str, int | None] = {}
        for cf, src in self._files:
            text = cf.read()
            if src.kind is Kind.INT:
                raw: list[int | None] = [int_or_none(text)]
            elif src.kind is Kind.KV:
                kv = parse_kv(text)
                raw = [kv.get(f.key or "") for f in src.fields]
            elif src.kind is Kind.IOSTAT:
                raw = list(parse_io_stat(text, src.skip))
            elif src.kind is Kind.PSI:
                raw = list(parse_psi(text))
            else:
                raw = list(parse_blkio(text, src.skip))
            for f, v in zip(src.fields, raw, strict=False):
                values[f.name] = None if v is None else v // f.divisor
        return Counters(**values)
