"""The process backend: where no cgroup can be created, the workload's process tree measured
through psutil.

Hosts without cgroup rights are common: an ordinary account on a cgroup v1 host, a CI job
inside an unprivileged container, a cgroup v2 session that was not delegated.  There the
kernel cannot be asked to count or limit a group, so this backend follows the tree itself
(its CPU time exact at the end, its memory sampled resident set size: :mod:`._process_run`):

* **Limits it can hold**: cores, through the CPU affinity every descendant inherits
  (``sched_setaffinity`` before exec), so an integer ``--cpus N`` is N whole cores.  It
  refuses what it cannot enforce instead of faking it: a CPU share (``--cpus 0.5`` needs
  the CFS bandwidth controller), ``--memory`` (Linux does not enforce ``RLIMIT_RSS``;
  ``RLIMIT_AS`` caps each process's address space, not the tree's memory: a Python that
  imports PyTorch maps well over 1 GiB it never touches, so a device-sized limit would kill
  a script that fits), and ``--pids`` (``RLIMIT_NPROC`` counts every process of the user,
  not of the run).  The workload may widen its own affinity; a cgroup's cpuset it could not.
"""

from __future__ import annotations

import os
from typing import ClassVar, Literal

from ..errors import BackendError, BackendUnavailable
from ..model import Limits, RunSpec
from ._disks import storage_limits
from ._own_group import OwnGroup, own_memory_group
from ._process_run import ProcessRun
from .base import Backend

INSTALL = "python3 -m pip install psutil"


def _require_psutil() -> None:
    try:
        import psutil  # noqa: F401
    except ImportError as exc:  # a declared dependency, but an install may have dropped it
        raise BackendUnavailable(f"the process backend needs psutil: {INSTALL}") from exc


def refusal(limits: Limits) -> str | None:
    """Why the process backend cannot hold ``limits`` (``None``: it can); ``limits`` as
    resolved, with an integer ``--cpus`` pinned to its cores."""
    how = "use a cgroup backend (edgeprof doctor says how to get one)"
    if limits.cpuset is not None and not hasattr(os, "sched_setaffinity"):
        return f"--cpus/--cpuset: this OS ({os.uname().sysname}) has no CPU affinity; {how}"
    if limits.cpus is not None and (limits.cpuset is None or limits.cpus != len(limits.cpuset)):
        return (
            f"--cpus {limits.cpus:g}: the process backend holds whole cores (CPU affinity) "
            f"but not a CPU share, which needs a cgroup's CPU bandwidth controller; give an "
            f"integer --cpus within the cores here, or {how}"
        )
    if limits.memory is not None:
        return (
            "--memory: the process backend cannot limit memory: Linux does not enforce "
            "RLIMIT_RSS, and RLIMIT_AS caps each process's address space, not the run's "
            "memory (an interpreter with PyTorch maps over 1 GiB it never touches); measure "
            f"the peak and gate it (--max-peak-memory), or {how}"
        )
    if limits.pids is not None:
        return (
            "--pids: the process backend cannot limit the run's processes (RLIMIT_NPROC "
            f"counts every process of the user); {how}"
        )
    if limits.storage_rates():
        return (
            f"{storage_limits(limits)}: the process backend cannot slow storage (only a "
            f"group's block I/O throttle does); {how}"
        )
    return None


class ProcessBackend(Backend):
    """Measures the workload's process tree (psutil) where no cgroup can be created.

    ``fallback``: why the cgroup backend could not be used, when ``auto`` chose this one;
    said once as the run's warning.  ``children_files``: find the tree through the kernel's
    per-thread children lists (``None``: where this kernel has them), else by scanning every
    process (tests force the scan).  ``own_group``: the memory group edgeprof runs in, whose
    OOM kills and limit are read (:mod:`edgeprof.backends._own_group`; ``auto``: found from
    ``/proc/self``; ``None``: none)."""

    name: ClassVar[str] = "process"
    applies_quota: ClassVar[bool] = False

    def __init__(
        self,
        fallback: str | None = None,
        children_files: bool | None = None,
        own_group: OwnGroup | Literal["auto"] | None = "auto",
    ) -> None:
        self._fallback = fallback
        if children_files is None:
            children_files = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
        self._children_files = children_files
        self._own_group = own_group

    @property
    def mechanism(self) -> str:
        return "process"

    @property
    def peak_source(self) -> str:
        return "rss"

    def check(self) -> None:
        _require_psutil()
        if not hasattr(os, "wait4"):
            raise BackendUnavailable("the process backend needs a POSIX system (os.wait4)")

    def available_cpus(self) -> tuple[int, ...]:
        if hasattr(os, "sched_getaffinity"):
            return tuple(sorted(os.sched_getaffinity(0)))
        return tuple(range(os.cpu_count() or 1))

    def limit_unavailable(self, limits: Limits) -> str | None:
        return refusal(limits)

    def warnings(self) -> list[str]:
        if self._fallback is None:
            return []
        # Its facts first, then the cgroup backend's reason: one long sentence with the
        # reason nested in parentheses had been hard to read (a tester's).
        return [
            "no cgroup can be created here, so the process backend measured: CPU time is "
            "exact, memory is the resident set size sampled, and no CPU share or memory "
            f"limit can be set. Why: {self._fallback}. edgeprof doctor explains"
        ]

    def launch(self, spec: RunSpec) -> ProcessRun:
        why = refusal(spec.limits)
        if why is not None:  # the runner checks first; a direct caller must not get less
            raise BackendError(why)
        own = own_memory_group() if self._own_group == "auto" else self._own_group
        return ProcessRun(spec, children_files=self._children_files, own_group=own)
