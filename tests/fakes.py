"""A scripted backend for the tests: a real process, counters from a function of elapsed time.

It exercises the runner, the sampler and the reports deterministically on any machine; it is
never a substitute for a kernel test.  Not part of edgeprof: the unit tier's conftest
registers it as ``fake`` (:func:`edgeprof.backends.register_backend`), and
``tests/fake_edgeprof.py`` does the same for a test that runs the CLI in a subprocess.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from edgeprof.backends._peak_reset import FdPeakReset, SharedPeakReset
from edgeprof.backends._process import Process
from edgeprof.backends._tasks import TaskScan, all_stopped
from edgeprof.backends.base import Backend, RunHandle
from edgeprof.backends.capabilities import PeakReset
from edgeprof.model import Counters, RunSpec

Script = Callable[[float], Counters]


def linear(cpu_pct: float = 50.0, memory_bytes: int = 0, peak_bytes: int | None = None) -> Script:
    """CPU time growing at ``cpu_pct`` of one CPU; constant memory; optional kernel peak."""

    def script(t: float) -> Counters:
        usage = int(t * cpu_pct / 100 * 1e6)
        return Counters(
            cpu_usage_us=usage,
            cpu_user_us=usage,
            cpu_system_us=0,
            nr_periods=int(t * 10),
            nr_throttled=0,
            throttled_us=0,
            memory_current=memory_bytes,
            memory_peak=peak_bytes,
            memory_inactive_file=0,
            oom_kills=0,
            io_read_bytes=0,
            io_write_bytes=0,
            pids_current=1,
        )

    return script


class FakeRun(RunHandle):
    """``peak_reset``: the real per-phase peak windows over a plain file (the file plays the
    kernel's ``memory.peak`` or ``memory.max_usage_in_bytes``); the handle owns and closes
    them, as a cgroup handle does.  ``oom_file``: once it exists the counters report an OOM
    kill, as the kernel's ``memory.events.local`` would."""

    def __init__(
        self,
        spec: RunSpec,
        script: Script,
        peak_reset: FdPeakReset | SharedPeakReset | None = None,
        oom_file: Path | None = None,
        others: Callable[[], int | None] | None = None,
        own_group: bool = True,
        tasks: TaskScan | None = None,
        group_asked: Path | None = None,
    ) -> None:
        super().__init__()
        self._group_asked = group_asked
        self._tasks = tasks
        self.scans: list[bool] = []
        """Each task scan's ``times`` argument, in order."""
        self._others = others
        self._script = script
        self._peak_reset = peak_reset
        self._oom_file = oom_file
        self.closed = 0
        self._own_group = own_group
        self._proc = Process.for_run(spec, new_session=own_group)
        self.pid = self._proc.pid
        self.started = self._proc.started
        self.counter_reads = 0
        self.others_reads = 0
        self._ended: float | None = None
        """When ``wait`` first saw the main process end: the script stops there, as a group's
        counters stop with its processes (they kept growing while the runner joined its
        threads before the last read, which a loaded machine made 40 ms and more)."""

    def counters(self) -> Counters:
        self.counter_reads += 1
        now = time.monotonic() if self._ended is None else self._ended
        c = self._script(now - self.started)
        if self._oom_file is not None and self._oom_file.exists():
            c = c._replace(oom_kills=1)
        return c

    @property
    def peak_reset(self) -> PeakReset | None:
        return self._peak_reset

    def others_running(self) -> int | None:
        self.others_reads += 1
        return None if self._others is None else self._others()

    def sample(self) -> Counters:
        return self.counters()

    def stopped(self) -> bool | None:
        # The real main process's state: the fake lists no members, and a stopped
        # workload is a real process's condition (the run loop's StopWatch).
        return None if self._proc.returncode is not None else all_stopped([self.pid])

    def task_scan(self, times: bool = True) -> TaskScan | None:
        self.scans.append(times)
        return self._tasks

    def wait(self, timeout: float | None) -> int | None:
        status = self._proc.wait(timeout)
        if status is not None and self._ended is None:
            # The script's counters freeze at the exit, and the wall time ends there too (the
            # base class's hook): a preemption between this and the runner's own clock had
            # skewed scripted rates against the wall.
            self._ended = self.ended = time.monotonic()
        return status

    def in_callers_group(self) -> bool:
        shared = self._proc.in_callers_group()
        if self._group_asked is not None:
            self._group_asked.touch()
        return shared

    def _signal_group(self, sig: int) -> None:
        if not self._own_group:  # the caller's group is not the run's to signal
            self._proc.signal(sig)
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, sig)

    def terminate(self) -> None:
        self._signal_group(signal.SIGTERM)

    def kill(self) -> None:
        self._signal_group(signal.SIGKILL)
        self._proc.reap()

    def close(self) -> None:
        self.closed += 1
        self.kill()
        self._proc.close()
        if self._peak_reset is not None:
            self._peak_reset.close()


class FakeBackend(Backend):
    name: ClassVar[str] = "fake"

    def __init__(
        self,
        script: Script | None = None,
        cpus: tuple[int, ...] = (0, 1),
        *,
        peak_file: Path | None = None,
        shared_peak: bool = False,
        oom_file: Path | None = None,
        others: Callable[[], int | None] | None = None,
        own_group: bool = True,
        tasks: TaskScan | None = None,
        possible: frozenset[int] | None = None,
        group_asked: Path | None = None,
    ) -> None:
        """``peak_file``: per-phase peak windows over this file, per descriptor (cgroup v2's
        kind) or, with ``shared_peak``, one shared mark (cgroup v1's kind).  ``others``: the
        scripted count of the run's processes besides its main one
        (``RunHandle.others_running``; ``None``: the backend cannot tell).  ``own_group``:
        the workload in a session of its own (signalled as a group), else in the caller's
        process group, as the cgroup and process backends spawn it (only its main process
        is signalled then: a workload with children would leave them running).  ``tasks``:
        what every scan of the run's tasks finds (``RunHandle.task_scan``; ``None``: the
        backend cannot list them).  ``possible``: the machine's CPUs (``None``: unknown, not
        this host's, so a test of scripted CPUs does not depend on the machine it runs on).
        ``group_asked``: a file touched whenever the runner asks whether the run is in its
        process group (``RunHandle.in_callers_group``), which it asks only once its handler
        has taken a stop signal: a test sends the next one only then, since two signals that
        come before Python runs the handler are taken as one."""
        self._group_asked = group_asked
        self._tasks = tasks
        self.script = script or linear()
        self._cpus = cpus
        self._possible = possible
        self._peak_file = peak_file
        self._shared_peak = shared_peak
        self._oom_file = oom_file
        self._others = others
        self._own_group = own_group
        self.runs: list[FakeRun] = []

    @property
    def mechanism(self) -> str:
        return "fake"

    def check(self) -> None:
        return None

    def available_cpus(self) -> tuple[int, ...]:
        return self._cpus

    def possible_cpus(self) -> frozenset[int] | None:
        return self._possible

    def warnings(self) -> list[str]:
        return ["fake backend: counters are scripted, not measured"]

    def launch(self, spec: RunSpec) -> FakeRun:
        peaks: FdPeakReset | SharedPeakReset | None = None
        if self._peak_file is not None:
            kind = SharedPeakReset if self._shared_peak else FdPeakReset
            peaks = kind(self._peak_file)
        run = FakeRun(
            spec,
            self.script,
            peaks,
            self._oom_file,
            self._others,
            self._own_group,
            self._tasks,
            self._group_asked,
        )
        self.runs.append(run)
        return run
