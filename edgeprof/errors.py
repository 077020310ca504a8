"""edgeprof's error tree.

Everything the profiler raises on purpose derives from :class:`EdgeprofError` (the
workload's :mod:`edgeprof.workload.instrument`, which imports nothing else of edgeprof,
raises ``TypeError`` and ``ValueError`` for a bad argument); dependencies'
errors (``OSError`` from cgroupfs, the Docker daemon's) are translated at the backend
boundary with ``raise ... from exc``.  A workload that is OOM-killed, times out or exits
non-zero is *not* an error: it is a :class:`~edgeprof.model.RunResult` with a termination.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")
C = TypeVar("C", bound=type)


def public(cls: C) -> C:
    """A class exported as ``edgeprof.<name>``, named so in tracebacks and reprs: pytest had
    printed ``edgeprof.measure.interrupts.Interrupted`` and ``edgeprof.errors.ConfigError``
    for the documented ``edgeprof.Interrupted`` and ``edgeprof.ConfigError`` (a test
    author's).  Pickle finds it there too (``edgeprof``'s lazy ``__getattr__`` loads its
    module).  Exceptions only: a dataclass's string annotations resolve in its module's
    namespace (``typing.get_type_hints``, the schema's), which ``edgeprof`` does not hold."""
    cls.__module__ = "edgeprof"
    return cls


@public
class EdgeprofError(Exception):
    """Base of every error the profiler raises deliberately (not the workload's ``phase``,
    ``iteration``, ``mark``: the module docstring).  The CLI prints it and exits 2."""


@public
class ConfigError(EdgeprofError):
    """Bad user input: a size, a CPU count, an interval, an output directory, a command."""


@public
class LimitError(ConfigError):
    """A limit that cannot be honoured on this host (``--cpus 4`` on 2 cores, ``--cpuset 7``)."""


@public
class CpusOverHost(LimitError):
    """A ``cpus`` above the CPUs a run may use here: ``available`` lists them (their count is
    the ``cpus`` that fits), so that a device's refusal can name it
    (:func:`edgeprof.measure.limits.device_refusal`)."""

    def __init__(self, message: str, cpus: float, available: tuple[int, ...]) -> None:
        super().__init__(message)
        self.cpus = cpus
        self.available = available

    def __reduce__(self) -> tuple[type[CpusOverHost], tuple[str, float, tuple[int, ...]]]:
        # Pickle rebuilds an exception as cls(*args), and args is the message alone: a
        # ProcessPoolExecutor's worker that raised it broke the whole pool
        # (BrokenProcessPool, every pending job lost; a tester's).
        return type(self), (str(self.args[0]), self.cpus, self.available)


@public
class CoresBusy(LimitError):
    """The cores a run needs are leased by other runs and ``cores_busy="fail"`` was asked
    (:mod:`edgeprof.measure.leases`)."""


@public
class UnsafeOutput(ConfigError):
    """An output edgeprof would write through a link, or into a file that is not a plain file
    of its own (a FIFO, a device, a file with other hard links): :mod:`edgeprof.outfiles`."""


@public
class OutputReplaced(UnsafeOutput):
    """An output directory edgeprof held while a run could act (:func:`edgeprof.held_dirs.hold`)
    is no longer the one held: moved, removed, or swapped for a link or another directory."""


@public
class BackendUnavailable(EdgeprofError):
    """The backend cannot run here; the message names the fix."""


@public
class LaunchError(EdgeprofError):
    """The workload could not be started (command not found, cgroup set-up failed)."""


@public
class BackendError(EdgeprofError):
    """A backend failed while a run was in progress (a counter file vanished, a write failed)."""


Spelling = str | Callable[[str], str]
"""A keyword as the library writes an option: its name (``"allow_over_host=True"``), or a
function of the option's value that writes both (``--pair a=b`` → ``pair={'a': 'b'}``)."""


def as_keywords(message: str, keywords: Mapping[str, Spelling]) -> str:
    """``message`` with each command-line option ``keywords`` knows (``"allow-over-host"``)
    spelled as the library's keyword (``"allow_over_host=True"``); any other option is left
    as it is (``--max-wall``: a budget of the command line's only)."""
    names = sorted(map(re.escape, keywords), key=len, reverse=True)
    # Not Docker's own option, named as such ("as Docker's --memory" had read "as Docker's
    # memory", a library user's).
    option = re.compile(
        r"(?<![\w-])(?<!Docker's )--(" + "|".join(names) + r")(?![\w-])(?: (\S+))?"
    )

    def spelled(m: re.Match[str]) -> str:
        spell, value = keywords[m.group(1)], m.group(2)
        if callable(spell) and value is not None:
            # The sentence's punctuation after the value is not the value's: "pair={'m1':
            # 'zz:'}" had been made of "--pair m1=zz:" (a verifier's).
            split = re.fullmatch(r"(.*?)([:,;.)\]]*)", value)
            assert split is not None  # any run of non-space characters matches
            return spell(split.group(1)) + split.group(2)
        name = spell if isinstance(spell, str) else m.group(1)
        return name if value is None else f"{name} {value}"

    return option.sub(spelled, message)


def respelled(keywords: Mapping[str, Spelling]) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """A library function whose :class:`EdgeprofError` names its keywords: the same exception
    (its class, its attributes) re-raised with :func:`as_keywords`'s message.  Its checks are
    the command line's, whose messages name the options."""

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def spelled(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return fn(*args, **kwargs)
            except EdgeprofError as exc:
                if len(exc.args) == 1 and isinstance(exc.args[0], str):
                    exc.args = (as_keywords(exc.args[0], keywords),)
                raise

        return spelled

    return decorate


def one_line(exc: BaseException) -> str:
    """What ``exc`` says, on one line (a YAML or JSON error spans several), or its type's
    name where it says nothing: the tail of an error edgeprof words itself."""
    return " ".join(str(exc).split()) or type(exc).__name__
