"""Outcomes to exit codes, without typer: the one mapping, shared by the typer app
(:mod:`edgeprof.cli.app`) and ``run``'s own parser (:mod:`edgeprof.cli.runargs`).

Exit codes: the workload's own (128+N when killed by signal N, as a shell reports it);
130 when edgeprof itself was interrupted; 2 for edgeprof's own errors (the tree of
:mod:`edgeprof.errors`: bad input, backend unavailable) and usage errors, printed as one line
``edgeprof: error: …`` on stderr; 3 for a budget breach (``run``) or a regression
(``compare``) when nothing else failed: an interruption or a failed workload takes precedence,
being the more basic failure (the budget checks are still printed and written).

Standard output that goes away is an outcome too (:class:`_Stdout`): a reader that leaves
(``edgeprof run … | head -1``: a broken pipe) or a terminal that is gone (EIO: its window
closed) changes nothing, the command finishes and exits with its own code; any other
failure to write it (``>/dev/full``) is one error line, exit 2; a closed one (``>&-``) is
written nowhere.  Standard error is held the same way, minus the error line (it would have
nowhere to go): writing to the terminal never stops the writing of the files.

A stop signal (Ctrl-C, SIGTERM, a closed terminal's SIGHUP …) ends the command as
interrupted, 130, once every output is written (:class:`~edgeprof.measure.interrupts.
CommandGuard`: the first signal stops the work, later ones are held); the command line then
dies by that signal (:func:`edgeprof.cli.entry`).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TextIO, cast

from .. import shared_output
from ..errors import EdgeprofError
from ..names import printable
from . import EXIT_BUDGET, EXIT_ERROR, EXIT_INTERRUPTED

if TYPE_CHECKING:
    from ..model import RunResult

__all__ = ["exit_code", "guarded", "runs_exit_code"]


OOM_KILLED = 137
"""128 + SIGKILL: the OOM killer's status, as a shell reports it."""


def exit_code(result: RunResult) -> int:
    """A run's exit code: the workload's own, 130 when edgeprof was interrupted, and 137
    for an OOM kill also when the process killed was a child and the main one exited 0:
    the run does not fit (its report says so), so a CI gate must not pass it."""
    from ..model import Termination  # loaded by then: a result exists

    if result.termination is Termination.INTERRUPTED:
        return EXIT_INTERRUPTED
    if result.termination is Termination.OOM and not result.exit_code:
        return OOM_KILLED
    return 1 if result.exit_code is None else result.exit_code


def runs_exit_code(results: Sequence[RunResult], breached: bool = False) -> int:
    """The first failed run's code; else 3 for a breached budget (or a regression); else 0.
    No result at all: the sweep was interrupted before its first measured run (130)."""
    if not results:
        return EXIT_INTERRUPTED
    return next((c for c in map(exit_code, results) if c), EXIT_BUDGET if breached else 0)


def guarded(command: Callable[[], int]) -> int:
    """``command``'s exit code; edgeprof's errors as one line on stderr (2), an interruption
    of edgeprof itself as 130; standard output as :class:`_Stdout` makes it, standard error
    held the same way."""
    from ..held_dirs import held_to_the_end
    from ..measure.interrupts import CommandGuard, stopped_by
    from ..openfiles import open_enough

    out = _Stdout(sys.stdout)
    err = _Stdout(sys.stderr, "standard error")
    saved, sys.stdout = sys.stdout, cast(TextIO, out)
    saved_err, sys.stderr = sys.stderr, cast(TextIO, err)
    try:
        try:
            open_enough()
            with CommandGuard(), held_to_the_end():
                code = command()
            if stopped_by() is not None:
                # Stopped, whatever else it says: a sweep that a signal ended between runs
                # (its runs each exited 0) had returned 0, as had one after a failed run 1.
                code = EXIT_INTERRUPTED
        finally:
            out.flush()  # what is still buffered fails here, not at the interpreter's exit
            err.flush()
    except EdgeprofError as exc:
        _show_measured(exc)
        # printable: a message quotes what it was given (a program's name, a file's key), and
        # an escape or a newline there would reach the terminal raw or split the one line.
        print(f"edgeprof: error: {printable(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:
        # A stop signal's KeyboardInterrupt that a C extension's import turned into its own
        # error ("ImportError: initialization failed", matplotlib's, 1 SIGTERM of 41 during
        # report --plots): the interruption it is, not a traceback and exit 1.
        if stopped_by() is not None and _interrupted(exc):
            return EXIT_INTERRUPTED
        raise
    finally:
        sys.stdout, sys.stderr = saved, saved_err
    if out.failure is not None:
        why = out.failure.strerror or out.failure
        line = f"edgeprof: error: cannot write to standard output: {why}"
        print(line, file=cast(TextIO, err))  # a terminal gone from under it: dropped
        return EXIT_ERROR
    return code


def _interrupted(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt is in ``exc``'s chain of causes and contexts."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def _show_measured(exc: EdgeprofError) -> None:
    """A run measured whose ``result.json`` could not be written (a full disk): its figures
    on stderr above the error, not lost with the file (and the error path only: imported
    here)."""
    from ..measure.runner import ResultNotSaved

    if isinstance(exc, ResultNotSaved):
        from ..report.results import print_table

        print_table([exc.result], sys.stderr)


_GONE = (errno.EPIPE, errno.EIO)
"""A reader that left: a pipe's (``| head -1``), a closed terminal's."""


class _Stdout:
    """``sys.stdout`` while a command runs.

    A broken pipe is the reader leaving (``edgeprof run … | head -1``), not a failure of the
    command: its result files are written, and a CI gate that pipes the table must pass or
    fail on the workload, not on the pager.  So the rest of the output is dropped and the
    command runs to its end (its exit code, its JUnit and summary files).  Measured before:
    ``run … | true`` exited 1 with a BrokenPipeError traceback, although the workload exited
    0.  Any other error (``>/dev/full``: ENOSPC, a traceback and exit 1 before) drops the
    rest too and makes the exit 2, one line.  A closed standard output (``>&-``: Python's
    ``sys.stdout`` is then ``None``, and ``run`` failed on ``None.isatty()``) is not a
    terminal and takes nothing.

    Once a write has failed, the descriptor is pointed at ``/dev/null``, as Python's docs on
    SIGPIPE advise: whatever the interpreter still holds is flushed there at exit, not into
    a second error ("Exception ignored … BrokenPipeError", exit 120).  CPython 3.11 here
    drops a buffer whose flush failed, so this is for the interpreters that keep it.

    A terminal that is gone is a reader that left too: writing to a pty whose window was
    closed fails with EIO, and had ended a run that SIGHUP interrupted with exit 1 and a
    sweep without its ``runs.csv``, ``cells.csv``, ``report.md``, ``--markdown`` and
    ``--junit`` (a tester's, closing a pty's master mid-run).

    Standard error (``name``) is held the same way (its progress lines, its ``edgeprof:``
    lines): it had no guard, and EIO there crashed the command before its files.

    The stream is the workload's too: edgeprof's first write after a workload's output
    there that ended mid-line starts a line of its own (:mod:`edgeprof.shared_output`: the
    table had read ``xxxxFinal Usage Stats``)."""

    def __init__(self, stream: TextIO | None, name: str = "standard output") -> None:
        self._stream = stream
        self._name = name
        self._dropped = stream is None
        self.failure: OSError | None = None
        """The first error other than a broken pipe."""
        self._checked = shared_output.stamp()
        """The workloads' output last looked at (:func:`~edgeprof.shared_output.stamp`)."""

    def write(self, text: str) -> int:
        if not self._dropped:
            try:
                if text:
                    self._fresh_line(text)
                cast(TextIO, self._stream).write(text)
            except OSError as exc:
                self._drop(exc)
        return len(text)

    def _fresh_line(self, text: str) -> None:
        """A newline first where a workload's output since the last look ended mid-line."""
        now = shared_output.stamp()
        if now is not None and now == self._checked:
            return
        self._checked = now
        stream = cast(TextIO, self._stream)
        stream.flush()  # edgeprof's own text before the workload's is out: the byte is theirs
        with contextlib.suppress(AttributeError, OSError, ValueError):  # no descriptor
            # Asked even where the text starts a line itself: a relay's record goes once read.
            if shared_output.mid_line(stream.fileno()) and not text.startswith("\n"):
                stream.write("\n")

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:  # each through write(): the stream's own would bypass the drop
            self.write(line)

    def flush(self) -> None:
        if not self._dropped:
            try:
                cast(TextIO, self._stream).flush()
            except OSError as exc:
                self._drop(exc)

    def isatty(self) -> bool:
        return self._stream is not None and not self._dropped and self._stream.isatty()

    def fileno(self) -> int:
        if self._stream is None:
            raise io.UnsupportedOperation(f"{self._name} is closed")
        return self._stream.fileno()

    def __getattr__(self, name: str) -> Any:  # encoding, errors, buffer …: the stream's
        return getattr(self._stream, name)

    def _drop(self, exc: OSError) -> None:
        self._dropped = True
        if exc.errno not in _GONE and self.failure is None:
            self.failure = exc
        with contextlib.suppress(AttributeError, OSError, ValueError):  # no descriptor: none
            fd = cast(TextIO, self._stream).fileno()
            null = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
            os.dup2(null, fd)
            os.close(null)
