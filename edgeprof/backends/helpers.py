"""What the layers above use of the backends' private modules, under public names.

:mod:`edgeprof.measure` and :mod:`edgeprof.layers` need a few of the process, systemd, task
and peak-window helpers the backends are built from (the stop signals a run's threads leave
to the main thread, killing a dead run's members, stopping its systemd unit, a task's CPU
time, a phase's peak from the samples, the disks a storage speed slows).  They import them
from here, never from a ``_``-prefixed module: those stay the backends' own to change, and
the import contracts (``pyproject.toml``, ``private-backends``) keep it so.
"""

from __future__ import annotations

from ._disks import SYS_BLOCK, disks
from ._peak_reset import sampled_phase_peaks
from ._process import HARD_STOPS, STOP_SIGNALS, kill_members, leave_stops_to_main_thread
from ._systemd_scope import stop_unit
from ._tasks import TaskScan, TaskTime

__all__ = [
    "HARD_STOPS",
    "STOP_SIGNALS",
    "SYS_BLOCK",
    "TaskScan",
    "TaskTime",
    "disks",
    "kill_members",
    "leave_stops_to_main_thread",
    "sampled_phase_peaks",
    "stop_unit",
]
