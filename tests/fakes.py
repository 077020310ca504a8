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
from typing import ClassVar

from edgeprof.backends._process import Process
from edgeprof.backends.base import Backend, RunHandle
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
    def __init__(self, spec: RunSpec, script: Script) -> None:
        super().__init__()
        self._script = script
        self._proc = Process(
            spec.command,
            env={**os.environ, **spec.env},
            cwd=spec.cwd,
            stdout=spec.stdout,
            stderr=spec.stderr,
            new_session=True,
            pass_fds=spec.pass_fds,
            run_as=spec.run_as,
        )
        self.pid = self._proc.pid
        self.started = self._proc.started
        self.counter_reads = 0

    def counters(self) -> Counters:
        self.counter_reads += 1
        return self._script(time.monotonic() - self.started)

    def sample(self) -> Counters:
        return self.counters()

    def wait(self, timeout: float | None) -> int | None:
        return self._proc.wait(timeout)

    def _signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, sig)

    def terminate(self) -> None:
        self._signal_group(signal.SIGTERM)

    def kill(self) -> None:
        self._signal_group(signal.SIGKILL)
        self._proc.reap()

    def close(self) -> None:
        self.kill()
        self._proc.close()


class FakeBackend(Backend):
    name: ClassVar[str] = "fake"

    def __init__(self, script: Script | None = None, cpus: tuple[int, ...] = (0, 1)) -> None:
        self.script = script or linear()
        self._cpus = cpus
        self.runs: list[FakeRun] = []

    @property
    def mechanism(self) -> str:
        return "fake"

    def check(self) -> None:
        return None

    def available_cpus(self) -> tuple[int, ...]:
        return self._cpus

    def warnings(self) -> list[str]:
        return ["fake backend: counters are scripted, not measured"]

    def launch(self, spec: RunSpec) -> FakeRun:
        run = FakeRun(spec, self.script)
        self.runs.append(run)
        return run
