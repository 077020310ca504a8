"""edgeprof's error tree.

Everything edgeprof raises on purpose derives from :class:`EdgeprofError`; dependencies'
errors (``OSError`` from cgroupfs, the Docker daemon's) are translated at the backend
boundary with ``raise ... from exc``.  A workload that is OOM-killed, times out or exits
non-zero is *not* an error: it is a :class:`~edgeprof.model.RunResult` with a termination.
"""

from __future__ import annotations


class EdgeprofError(Exception):
    """Base of every error edgeprof raises deliberately.  The CLI prints it and exits 2."""


class ConfigError(EdgeprofError):
    """Bad user input: a size, a CPU count, an interval, an output directory, a command."""


class LimitError(ConfigError):
    """A limit that cannot be honoured on this host (``--cpus 4`` on 2 cores, ``--cpuset 7``)."""


class CoresBusy(LimitError):
    """The cores a run needs are leased by other runs and ``cores_busy="fail"`` was asked
    (:mod:`edgeprof.measure.leases`)."""


class UnsafeOutput(ConfigError):
    """An output edgeprof would write through a link, or into a file that is not a plain file
    of its own (a FIFO, a device, a file with other hard links): :mod:`edgeprof.outfiles`."""


class BackendUnavailable(EdgeprofError):
    """The backend cannot run here; the message names the fix."""


class LaunchError(EdgeprofError):
    """The workload could not be started (command not found, cgroup set-up failed)."""


class BackendError(EdgeprofError):
    """A backend failed while a run was in progress (a counter file vanished, a write failed)."""
