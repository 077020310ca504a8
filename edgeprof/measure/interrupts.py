"""The signals that stop edgeprof during a run, turned into an ``interrupted`` result.

The handlers live in the main thread (Python runs them only there); helper threads block
the same signals (:func:`~edgeprof.backends._process.leave_stops_to_main_thread`), so a
signal always wakes the main thread's wait on the workload.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

from ..backends._process import HARD_STOPS, STOP_SIGNALS


class Interrupted(BaseException):
    """A stop signal to edgeprof while it waited on the workload: the run ends as
    ``interrupted``."""


class SignalGuard:
    """:data:`~edgeprof.backends._process.STOP_SIGNALS` to edgeprof during a run (main
    thread only), from the core lease to the result file.

    While :meth:`armed` (waiting for the workload) the first signal raises
    :class:`Interrupted`; outside it, and for any further signal, it is only recorded
    (``received``), so a second Ctrl-C cannot cut the clean-up short, leave a group or a
    process behind, or lose the result file.
    """

    def __init__(self) -> None:
        self._armed = False
        self.received: int | None = None
        self._previous: dict[int, object] = {}

    def __enter__(self) -> SignalGuard:
        if threading.current_thread() is threading.main_thread():
            for sig in sorted(STOP_SIGNALS):
                # An ignored signal stays ignored: nohup's SIGHUP, the SIGINT a
                # non-interactive shell's background job ignores (taken over, a run under
                # nohup would have ended at logout, and a background job at Ctrl-C).
                now = signal.getsignal(sig)
                # All but HARD_STOPS only at their default (which ends the process): a
                # caller's own handler (signal.alarm, pytest-timeout, a profiler's SIGPROF)
                # keeps them.
                # A handler set outside Python (getsignal's None) is its owner's: it could
                # not be put back after the run.
                if now is None or now is signal.SIG_IGN:
                    continue
                if sig in HARD_STOPS or now is signal.SIG_DFL:
                    self._previous[sig] = signal.signal(sig, self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)  # type: ignore[arg-type]

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        self.received = signum
        if self._armed:
            self._armed = False
            raise Interrupted(signum)

    @contextlib.contextmanager
    def armed(self) -> Iterator[None]:
        # A signal that came while the run was being set up (before the wait) was only
        # recorded: acting on it now, or the run would go on until the workload ends by itself.
        if self.received is not None:
            raise Interrupted(self.received)
        self._armed = True
        try:
            yield
        finally:
            self._armed = False
