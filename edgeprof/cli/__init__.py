"""The command line: thin.  Each command declares its options and calls the library; the
exit codes, and the one-line ``edgeprof: error: …`` for edgeprof's errors, are
:mod:`edgeprof.cli.app`'s.

Start-up is the fixed cost of every command, so nothing loads before it is needed:
``edgeprof --version`` is answered here, before typer is imported (typer and its click cost
~40 ms of a ~60 ms ``--version`` on our 2-core host, against 24 ms for ``python -c pass``),
and :mod:`~edgeprof.cli.app` imports a command's module, and builds its parser, only when
that command runs (building all twelve parsers took 57 ms: typer evaluates every
annotation).  A plain ``run`` command line does without typer altogether
(:mod:`~edgeprof.cli.runargs`: typer took 40–65 ms of a ~240 ms ``run -- /bin/true``).
:data:`COMMANDS` is the table, in the order ``--help`` lists them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys

from ..version import __version__

EXIT_ERROR = 2
EXIT_BUDGET = 3
"""A budget breach or a regression: distinct from the workload's failure and from errors."""
EXIT_INTERRUPTED = 130

COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("run", "run"),
    "fit": ("fit", "fit_cmd"),
    "compare": ("results", "compare"),
    "report": ("results", "report"),
    "merge": ("results", "merge"),
    "recipe": ("recipe", "recipe"),
    "calibrate": ("calibrate", "calibrate_cmd"),
    "gc": ("tools", "gc"),
    "doctor": ("tools", "doctor"),
    "bench": ("tools", "bench"),
    "devices": ("tools", "devices"),
    "layers": ("layers", "layers_app"),
}
"""Command name → (module of :mod:`edgeprof.cli`, the function or sub-app in it)."""

__all__ = ["COMMANDS", "EXIT_BUDGET", "EXIT_ERROR", "EXIT_INTERRUPTED", "entry", "main"]


def entry() -> None:
    """The ``edgeprof`` program (``python -m edgeprof`` too): :func:`main`'s exit code, or,
    when a stop signal interrupted it, one line saying so and then death by that signal,
    once every output is written.

    A shell tells a child that handled Ctrl-C and went on from one that stopped by how it
    ended (wait-and-cooperative-exit: https://www.cons.org/cracauer/sigint.html): exit 130
    is the former, so ``for m in a b c; do edgeprof run …; done`` had run b and c after a
    Ctrl-C in a, and exited 0 (a tester's).  Dying by SIGINT stops the loop, as plain
    ``python3`` does; SIGTERM is 143 to a shell, SIGHUP 129.  A signal whose default also
    dumps core (SIGQUIT, SIGXCPU) ends it with its code, as before: no core file of a clean end.
    :func:`main` itself returns 130 (a library caller's process is not edgeprof's to end).

    Its own handler (:func:`_on_stop`) is the first thing it sets, before :func:`main`'s
    imports and its command's guard: a stop signal there stops the program (one line, death
    by it), and one after the command has stopped, or ended, is only held.  Measured before:
    a Ctrl-C 0.085 s after the start (in the imports) was a 12-line KeyboardInterrupt
    traceback, and a burst of SIGINTs printed a traceback after ``edgeprof: interrupted``
    in 1 try of ~10 (Python's own handler, put back after the command, raised again).
    """
    global _ending, _taken
    try:
        _take_stops()
        code = main()
    except KeyboardInterrupt:  # _on_stop's: before main's guard stood, or after it
        code = EXIT_INTERRUPTED
        if _stop_signal() is None:  # Python's own, before _on_stop was set (1 try in 300)
            _taken = signal.SIGINT
    _ending = True
    stopped = _stop_signal()
    if stopped is not None:
        _die_by(stopped)
    raise SystemExit(code)


_STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
"""What :func:`entry` takes over at its start: ``HARD_STOPS`` of
:mod:`edgeprof.backends._process` (not imported for it: that module's imports are the
window it closes).  The other stop signals stay at their default, where a command's guard
takes them (it takes only those)."""

_taken: int | None = None
"""The stop signal :func:`_on_stop` took first (none of a command's guard before it)."""

_ending = False
""":func:`main` has returned: a stop signal is held, not raised, from here."""


def _take_stops() -> None:
    for sig in _STOPS:
        # One edgeprof was started with ignored stays ignored (nohup's SIGHUP, a background
        # job's SIGINT), as every guard leaves it; one set outside Python (None) is its own.
        now = signal.getsignal(sig)
        if now is not None and now is not signal.SIG_IGN:
            signal.signal(sig, _on_stop)


def _on_stop(signum: int, frame: object) -> None:
    """The first stop signal raises :exc:`KeyboardInterrupt` (which :func:`entry` catches,
    wherever it lands before :func:`main` returns); any later one, and any once the command
    has stopped or :func:`main` has returned, is recorded only."""
    global _taken
    first = _stop_signal() is None
    if first:
        _taken = signum
        if not _ending:
            raise KeyboardInterrupt


def _stop_signal() -> int | None:
    """The signal that stopped the program: its command guard's first, else its own."""
    # A module being imported is in sys.modules before its names are: a signal in its
    # import raised AttributeError here without getattr (a traceback, exit 1: 8 tries of 40
    # Ctrl-Cs in the first 0.15 s).
    stopped_by = getattr(sys.modules.get("edgeprof.measure.interrupts"), "stopped_by", None)
    command = None if stopped_by is None else stopped_by()
    return command if command is not None else _taken


_CORE = frozenset({signal.SIGQUIT, signal.SIGXCPU, signal.SIGXFSZ, signal.SIGSYS})
"""Stop signals whose default action dumps core: not re-raised (see :func:`entry`)."""


def _die_by(sig: int) -> None:
    """One line, the buffered output flushed, then the default action of ``sig``, whatever
    code the command had: a sweep stopped after a failed run (1) or over a budget (3) had
    exited so, and a shell loop over it had gone on after the Ctrl-C (a reviewer's); that
    news is in the outputs, written by now.  A core-dumping signal returns (its caller exits
    with the code)."""
    # Every signal is held first: no later one runs a handler, nor ends edgeprof by another
    # signal's default, from here; only ``sig`` is let through at the end.
    signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    with _quiet():
        print(f"edgeprof: interrupted ({signal.Signals(sig).name})", file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        with _quiet():
            if stream is not None:
                stream.flush()
    if sig in _CORE:
        return
    # Death by a signal's default action runs no atexit handler: those registered (the
    # temporary matplotlib directory of --plots) run first, or it was left in /tmp (a user's).
    import atexit  # here: the modules loaded before the handler is set are kept few

    with _quiet():
        atexit._run_exitfuncs()
    signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {sig})  # a pending one of the burst ends it here
    os.kill(os.getpid(), sig)


def _quiet() -> contextlib.AbstractContextManager[None]:
    """A terminal gone, a closed stream: nothing left to say it on."""
    return contextlib.suppress(OSError, ValueError, AttributeError)


def _reopen_closed_stderr() -> None:
    """A closed standard error (``2>&-``) as ``/dev/null``: Python makes ``sys.stderr``
    ``None``, and ``run --json``, every sweep and ``bench --json`` had failed on its
    ``fileno()`` or ``isatty()`` before anything ran (exit 1, no message).  Descriptor 2 is
    taken too, so that no file edgeprof opens becomes descriptor 2 (where a C library's
    message would land in it)."""
    if sys.stderr is not None:
        return
    try:
        os.fstat(2)
    except OSError:  # closed: /dev/null there (else its stream below)
        fd = os.open(os.devnull, os.O_WRONLY)
        if fd != 2:
            os.dup2(fd, 2)
            os.close(fd)
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115 (the process's, never closed)


def main(argv: list[str] | None = None) -> int:
    """Entry point: every edgeprof error and usage error is one line on stderr, exit 2."""
    from .plain import plain_streams

    _reopen_closed_stderr()
    plain_streams()
    args = sys.argv[1:] if argv is None else list(argv)
    if args == ["--version"]:  # the app's eager option prints the same line
        from .outcome import guarded  # its standard output too: ">/dev/full" is one line

        return guarded(lambda: print(f"edgeprof {__version__}") or 0)
    if args[:1] == ["run"]:
        from .runargs import parse

        params = parse(args[1:])
        if params is not None:  # a plain command line: no parser to build (runargs)
            from .outcome import guarded
            from .runargs import execute

            return guarded(lambda: execute(params))
    from .app import main as app_main

    return app_main(args)
