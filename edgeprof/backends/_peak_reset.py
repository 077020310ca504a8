"""Kernel high-water marks per phase: the two ways a cgroup lets us restart its peak.

* cgroup v2, Linux ≥ 6.12: a write to ``memory.peak`` resets the peak *seen through that
  file descriptor* (each phase opens its own; the run's peak, read through another, is
  untouched).  Older kernels refuse the write; the phase peaks are then sampled.
* cgroup v1: a write to ``memory.max_usage_in_bytes`` resets the group's one high-water mark
  to the current usage.  It is shared, so every reset first reads the mark and carries it
  into each open window and into :attr:`SharedPeakReset.floor`, the run's peak before the
  resets.  The run handle's ``counters()`` reports the larger of the floor and the kernel's
  reading (:func:`apply_floor`), so the run's peak is right whatever the phases did.  A
  spike that starts and ends between that read and the reset (a few microseconds) is lost
  to the run's peak.

Both implement :class:`edgeprof.backends.capabilities.PeakReset`: they are driven from the runner's
events thread when a phase's ``begin``/``end`` line arrives; ``start()`` returns a token for
``stop()``, or ``None`` when no reset is possible.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ..errors import BackendError
from ..model import Counters
from . import cgroup_parse
from . import cgroupfs as fs


class FdPeakReset:
    """cgroup v2 ``memory.peak``, reset per open file descriptor (Linux ≥ 6.12).

    It owns the descriptors of its windows: :meth:`stop` closes the one of its token, once
    (an unknown or already stopped token returns ``None`` and closes nothing: a descriptor
    number is reused by the next ``open``, so closing it twice could close someone else's
    file), and :meth:`close` closes those still open.  Seen on 6.12 and 6.18 before this
    rule: a run OOM-killed or timed out inside a phase stopped its window twice, and the
    second ``close`` raised EBADF out of the run loop.
    """

    floor: int | None = None
    """Always ``None``: a per-descriptor reset leaves the run's own mark alone."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._usable = True
        self._fds: set[int] = set()

    def start(self) -> object | None:
        if not self._usable:
            return None
        try:
            fd = os.open(self._path, os.O_RDWR | os.O_CLOEXEC)
        except OSError:  # missing (< 5.19) or read-only (< 6.12)
            self._usable = False
            return None
        try:
            os.write(fd, b"reset\n")
        except OSError:
            os.close(fd)
            self._usable = False
            return None
        self._fds.add(fd)
        return fd

    def stop(self, token: object | None) -> int | None:
        if not isinstance(token, int) or token not in self._fds:
            return None
        self._fds.discard(token)
        try:
            return cgroup_parse.parse_int(os.pread(token, 64, 0).decode("ascii", "replace"))
        except (OSError, ValueError):
            return None
        finally:
            os.close(token)

    def close(self) -> None:
        while self._fds:
            with contextlib.suppress(OSError):
                os.close(self._fds.pop())


class SharedPeakReset:
    """cgroup v1 ``memory.max_usage_in_bytes``: one mark per group, reset by writing 0."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._open: dict[int, int] = {}
        self._next = 0
        self._usable = True
        self.floor: int | None = None
        """The highest mark read before a reset: the run's peak up to then."""

    def _read(self) -> int:
        return cgroup_parse.parse_int(fs.read_text(self._path))

    def start(self) -> object | None:
        if not self._usable:
            return None
        try:
            mark = self._read()
            fs.write(self._path, "0")
        except (BackendError, ValueError):  # no kernel peaks for phases here
            self._usable = False
            return None
        self.floor = mark if self.floor is None else max(self.floor, mark)
        for k in self._open:
            self._open[k] = max(self._open[k], mark)
        self._next += 1
        self._open[self._next] = 0
        return self._next

    def stop(self, token: object | None) -> int | None:
        if not isinstance(token, int) or token not in self._open:
            return None
        best = self._open.pop(token)
        with contextlib.suppress(BackendError, ValueError):
            return max(best, self._read())
        return None

    def close(self) -> None:
        self._open.clear()


def apply_floor(c: Counters, floor: int | None) -> Counters:
    """``c`` with its kernel peak raised to ``floor``, the highest mark read before a reset
    of the group's one shared mark (cgroup v1): the resets lowered what the kernel reports
    now, and the run's peak is the highest mark read before a reset or at the end."""
    if floor is None or c.memory_peak is None:
        return c
    return c._replace(memory_peak=max(c.memory_peak, floor))


def sampled_phase_peaks(mechanism: str | None, reset_given: bool) -> str:
    """The run's warning when its phase peaks are sampled (the largest sample inside each
    phase, a lower bound), with the true reason: ``mechanism`` is the backend's
    (``Backend.mechanism``), ``reset_given`` whether its run handle had a :class:`PeakReset`
    (one that the kernel then refused).  Only a cgroup's mark can be restarted: the process
    backend has none, and the docker backend does not restart its container's."""
    why = "this backend cannot restart a memory high-water mark per phase"
    if mechanism == "process":
        why = (
            "the process backend has no kernel high-water mark to restart per phase (it "
            "samples resident set size; a cgroup backend has one)"
        )
    elif mechanism is not None and mechanism.startswith("docker"):
        why = (
            f"the docker backend ({mechanism}) does not restart the container's high-water "
            "mark per phase (--backend cgroup does)"
        )
    elif mechanism == "cgroup1":
        why = "the kernel refused to reset this group's memory.max_usage_in_bytes"
    elif mechanism == "cgroup2" or reset_given:
        why = (
            "this kernel cannot restart its high-water mark per phase (cgroup v2 needs Linux 6.12)"
        )
    return f"phase peaks are sampled (largest sample inside each phase): {why}"
