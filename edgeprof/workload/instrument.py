"""Instrumentation used inside the workload: phases, iterations and marks.

Standard library only, and a no-op unless the script runs under edgeprof::

    import edgeprof

    with edgeprof.phase("load"):
        model = load()
    with edgeprof.phase("infer"):
        for batch in batches:
            with edgeprof.iteration(items=len(batch)):
                model(batch)
    edgeprof.mark("done")

``import edgeprof`` loads only this module (the rest of the package is imported lazily), so a
workload pays a few hundred microseconds for it.  In an environment where edgeprof is not
installed, this one file can be copied next to the script (``import instrument as edgeprof``).

What the script passes is checked at the call, under edgeprof or not, so that a mistake shows
where it is made: a name that is not a ``str``, or ``items`` that is not an ``int``, is a
:class:`TypeError`; ``items`` below 0 or above ``MAX_ITEMS`` a :class:`ValueError`.  A name
is sent as written where it is one word of printable characters; otherwise each space
becomes ``\u2423``, a control character its picture (``\u2409`` for a tab) and other
whitespace ``<U+XXXX>``, so that two names stay two phases.  What edgeprof's side does is
never raised into the workload: without the runner, or once its pipe is gone, an event is
dropped.

How it reaches the runner: ``edgeprof run`` gives the workload the write end of a pipe and
names it in ``EDGEPROF_EVENTS_FD`` (with its inode in ``EDGEPROF_EVENTS_INODE``, so a
grandchild that inherited the variable but not the descriptor writes nothing to whatever file
reuses that number).  In a container (Docker backend, local daemon) no descriptor can be
inherited: a FIFO is bind-mounted at ``/run/edgeprof/events`` and named in
``EDGEPROF_EVENTS``.  Each event is one line, written with one ``write()`` (atomic below 4 KiB,
so threads and child processes may share the pipe; a child started by spawn or forkserver
opens it again through its parent, :func:`_from_ancestor`).  Timestamps are ``time.monotonic()``
(``CLOCK_MONOTONIC``), the clock of the sampler.  The line protocol, for workloads in other
languages (words separated by spaces; ``T`` a decimal number of seconds on
``CLOCK_MONOTONIC``; a missing ``T`` means "when the runner reads the line")::

    begin NAME [T [held]]   a phase NAME starts (``held``: the writer waits, below)
    end NAME [T [held]]     the innermost open phase NAME ends
    mark NAME [T [held]]    an instant
    iter T0 T1 [ITEMS]      one iteration from T0 to T1, of ITEMS items (default 1 where
                            other iterations of its phase give ITEMS; a phase where none
                            does has no item count)
    raised T0 T1            one iteration from T0 to T1 that raised: counted apart, out of
                            the latency and throughput
    nested T0 T1            an iteration from T0 to T1 inside another of the same thread:
                            no iteration of the run (its time is in the outer one's), only
                            counted, in one warning
    waited T0 T1            the writer's previous line waited on the full pipe from T0 to T1
                            (summed into a warning: edgeprof read too slowly)
    probe T0 T1 [ITEMS]     an empty iteration the client times to measure its own cost
                            (in no figure)
    cost S N                the client's own time per iteration outside the timed window,
                            S seconds (the median of N empty round trips): reported beside
                            the throughput, which it is part of

A boundary (``begin``, ``end``, ``mark``) may be *held* where ``EDGEPROF_EVENTS_SYNC`` names
a Unix socket (``FD:INODE``): its line ends with the word ``held`` (``begin NAME T held``),
then the client writes one byte there and reads one back, which edgeprof sends once it has
read the run's counters (and restarted or read the phase's kernel peak), so those figures
are the boundary's own, stamped with T, not ones read up to 10 ms later while the next phase
ran.  A held boundary costs a round trip (about 0.5 ms on a loaded 2-core host), so the
client holds one only while its waits stay within :data:`HOLD_SHARE` of the time since its
first event plus :data:`HOLD_CREDIT_S` (:meth:`_Channel.holds`): a run's stage phases are
held, a phase per step rarely; a boundary not held is read when edgeprof's poll comes to its
line, as a writer's in another language that does not speak the socket.  An iteration never
waits, and a hold inside one is left out of its latency: the client sends its ``iter`` line
with T0 moved later by the time its thread waited (:class:`iteration`).

NAME is any run of non-space characters (at most 200, no control characters; the client
cuts a longer one to 191 and ends it with ``~`` and 8 hex digits of the whole name's hash,
so that two long names stay apart); a line is at
most 4096 bytes, a time at most 1e10, ITEMS below 2**63.  The runner ignores a malformed line
(and says how many it ignored, in the result's warnings); it never stops the run.  It keeps
the first 256 distinct phase names, the first 1024 marks and the durations of the first
100 000 iterations (later ones still count in every total, and in the percentiles within
±1 %); what it leaves out is counted in the result (``events``) and warned about.  From a
shell: ``echo "begin load" > /proc/self/fd/$EDGEPROF_EVENTS_FD`` (bash also takes
``>&"$EDGEPROF_EVENTS_FD"``; dash's ``>&N`` only descriptors 0-9), or in a container
``echo "begin load" > "$EDGEPROF_EVENTS"``.
"""

from __future__ import annotations

import contextvars
import functools
import operator
import os
import select
import stat
import sys
import time
from _thread import allocate_lock, get_ident
from collections.abc import Callable
from contextlib import ContextDecorator
from types import TracebackType
from typing import Any, TypeVar, cast

_F = TypeVar("_F", bound=Callable[..., Any])

FD_ENV = "EDGEPROF_EVENTS_FD"
INODE_ENV = "EDGEPROF_EVENTS_INODE"
PATH_ENV = "EDGEPROF_EVENTS"
"""A FIFO to open for writing, where no descriptor could be inherited (a container)."""
EVENTS_CONTAINER_PATH = "/run/edgeprof/events"
SYNC_ENV = "EDGEPROF_EVENTS_SYNC"
"""``FD:INODE`` of a Unix socket on which the client waits at a boundary (:meth:`_Channel.held`)
until the runner has read the counters there."""
SYNC_TIMEOUT_S = 1.0
"""How long a boundary waits for the runner's answer (a few hundred µs normally) before the
process stops waiting at boundaries: a runner held off its CPU that long must not hold the
workload up at every phase."""
HOLD_SHARE = 0.01
"""The share of a process's time since its first event that its boundaries may spend held
(:meth:`_Channel.holds`).  Held at every boundary, an empty phase per step cost 757-1275 µs
where it cost 10-45 µs not held (``cost.py 2000`` on a loaded 2-core host), and two phases in
each 4 ms iteration took the loop's wall time from 6.2-7.0 s to 8.3-9.8 s; within 1 %, a
phase per step cost 18.8-76.9 µs (31.3-56.8 µs with no holds, the same minutes) and the
holds 92-107 ms of a 6.4-8.5 s loop: the wall time stays within about 1 % (plus
:data:`HOLD_CREDIT_S`) of the run's without holds."""
HOLD_CREDIT_S = 0.02
"""Seconds of holds a process may spend before its share has accrued: its first boundaries
come at once (a ``load`` phase's begin), and 20 ms held a script's first 43-105 boundaries
(``cost.py``; its stage phases) whatever their times."""
UNAVAILABLE_ENV = "EDGEPROF_EVENTS_UNAVAILABLE"
"""Set by a backend that cannot pass the channel (Docker): its value says why."""
MAX_NAME = 200
HELD_UP_S = 1e-4
"""A write to the events pipe that took longer than this waited on edgeprof (a write that
does not wait takes 2-5 µs, formatting included).  A preemption in those microseconds would
count too; it is rare at this width."""
MAX_ITEMS = 2**63 - 1
"""The runner stores an iteration's items as a signed 64-bit integer."""
GPU_MEMORY_ENV = "EDGEPROF_GPU_MEMORY"
"""Bytes: the device's GPU memory (``--gpu-memory``), to which a PyTorch workload caps its
own CUDA allocations (:func:`limit_gpu_memory`)."""
GPU_CAPPED_MARK = "edgeprof.gpu-memory-capped"
"""The mark a process sends once it capped itself: the runner counts it (the result says the
limit was enforced) and keeps it out of the marks."""

PROBES = 32
"""Empty iterations a process times before its first one under edgeprof (:func:`_probe`)."""

__all__ = ["active", "iteration", "limit_gpu_memory", "mark", "phase"]


class _Channel:
    """The write end of the runner's pipe, found lazily; ``fd is None`` means no-op."""

    def __init__(self) -> None:
        self.fd: int | None = None
        self.sync: int | None = None
        """The socket a boundary waits on (:meth:`held`); ``None``: boundaries do not wait."""
        self._looked = False
        # Threads' first events at once: the lookup is made by one, the others wait for it
        # (one of four threads' first phases had been sent, the others' dropped: a user's).
        self._lock = allocate_lock()
        self.since = 0.0
        """Monotonic time of the process's first event (the channel's lookup)."""
        self.held_s = 0.0
        """Seconds this process's boundaries waited, all threads (:meth:`holds`)."""

    def forget(self) -> None:
        """After a fork: the child looks at its own environment again on first use."""
        self._looked = False
        self._lock = allocate_lock()  # a fork while another thread held it: never released
        self.fd = self.sync = None
        _thread_held.clear()

    def _open(self) -> None:
        self.fd = None
        self.since, self.held_s = time.monotonic(), 0.0
        raw = os.environ.get(FD_ENV)
        path = os.environ.get(PATH_ENV)
        if raw is None and path:
            self._open_path(path)
            return
        if raw is None:
            why = os.environ.get(UNAVAILABLE_ENV)
            if why:
                print(f"edgeprof: phases, iterations and marks are not recorded: {why}",
                      file=sys.stderr)
            return
        try:
            fd = int(raw)
        except ValueError:
            return
        inode = os.environ.get(INODE_ENV)
        if _is_pipe(fd, inode):
            self.fd = fd
            self.sync = _sync_socket(os.environ.get(SYNC_ENV))
        elif inode is not None:  # inherited the variable, not the descriptor
            self.fd = _from_ancestor(fd, inode)

    def _open_path(self, path: str) -> None:
        try:
            # Non-blocking: without a reader (not under edgeprof) the open fails at once.
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            os.close(fd)
            return
        os.set_blocking(fd, True)
        self.fd = fd

    def ready(self) -> bool:
        """Whether events go anywhere (checked before a line is formatted: the no-op path)."""
        if not self._looked:  # first use (or first in a forked child)
            with self._lock:
                if not self._looked:
                    self._open()
                    self._looked = True  # only now: another thread reads fd after it
        return self.fd is not None

    def send(self, line: str, t: float) -> None:
        """``line``, stamped (or, an iteration, ended) at monotonic ``t``.  A write that
        returns more than :data:`HELD_UP_S` after ``t`` waited on a full pipe (edgeprof
        reads more slowly than the workload writes): that wait is sent as a ``waited``
        line, so the run can say how long its workload was held up, measured here."""
        if self.fd is None:
            return
        try:
            os.write(self.fd, line.encode("utf-8", "replace"))
            t1 = time.monotonic()
            if t1 - t > HELD_UP_S:
                os.write(self.fd, f"waited {t:.9f} {t1:.9f}\n".encode())
        except OSError:  # the runner is gone (EPIPE) or the descriptor was closed
            self.fd = None

    def holds(self, t: float) -> bool:
        """Whether a boundary at monotonic ``t`` is held: a socket to wait on, and waits so
        far within :data:`HOLD_SHARE` of the time since the first event plus
        :data:`HOLD_CREDIT_S`.  Checked before the wait, so one wait may go past it."""
        return self.sync is not None and (
            self.held_s <= HOLD_SHARE * (t - self.since) + HOLD_CREDIT_S
        )

    def boundary(self, line: str, t: float) -> None:
        """A boundary's ``line`` (a phase's begin or end, a mark, without its newline), held
        where the budget allows (:meth:`holds`): sent with the word ``held`` and this
        thread kept until the runner has read it and the run's counters (and restarted or
        read the phase's kernel peak), so the figures are of the boundary itself.  Read
        when the runner's poll came to the line, up to 10 ms later, the next phase ran
        meanwhile: a 0.25 s sleeping phase before a 150 MiB allocation had a kernel peak of
        11.8-16.8 MiB for its own 5.3-5.6, and a sleeping phase after a busy one read 7.9 ms
        of CPU for its own 0.1 (a tester's).  Not held, the line goes as before."""
        if not self.holds(t):
            self.send(line + "\n", t)
            return
        self.send(line + " held\n", t)
        sync = self.sync
        if sync is None or self.fd is None:  # the write found the runner gone
            return
        start = time.monotonic()
        try:
            os.write(sync, b"s")
            answered = bool(select.select([sync], [], [], SYNC_TIMEOUT_S)[0] and os.read(sync, 1))
        except OSError:
            answered = False
        waited = time.monotonic() - start
        self.held_s += waited
        me = get_ident()
        _thread_held[me] = _thread_held.get(me, 0.0) + waited
        if not answered:
            self.sync = None  # the runner is gone or too slow: boundaries stop waiting


_thread_held: dict[int, float] = {}
"""Seconds each thread (by ident) waited at held boundaries: an iteration leaves its own
thread's out of its latency (:class:`iteration`)."""


def _sync_socket(raw: str | None) -> int | None:
    """The runner's boundary socket named in ``raw`` (``FD:INODE``), where it is this
    process's (a grandchild that inherited the variable and not the descriptor has none)."""
    fd, _, inode = (raw or "").partition(":")
    try:
        st = os.fstat(int(fd))
    except (OSError, ValueError):
        return None
    return int(fd) if stat.S_ISSOCK(st.st_mode) and str(st.st_ino) == inode else None


def _is_pipe(fd: int, inode: str | None) -> bool:
    try:
        st = os.fstat(fd)
    except OSError:
        return False
    return stat.S_ISFIFO(st.st_mode) and (inode is None or inode == str(st.st_ino))


def _from_ancestor(fd: int, inode: str, most: int = 8) -> int | None:
    """The runner's pipe, opened again through an ancestor that holds it.

    A ``multiprocessing`` child started by spawn or forkserver (Python 3.14's default on
    Linux) inherits the environment but not the descriptor: its events had been dropped in
    silence.  ``/proc/PID/fd/N`` of a pipe opens that pipe again; the inode says it is the
    runner's, not what the ancestor now keeps at that number."""
    pid = os.getppid()
    for _ in range(most):
        if pid <= 1:
            return None
        link = f"/proc/{pid}/fd/{fd}"
        try:  # what the link names, before anything is opened (a device's open can act)
            st = os.stat(link)
            if stat.S_ISFIFO(st.st_mode) and str(st.st_ino) == inode:
                # non-blocking: opened as a FIFO is, it would wait for a reader otherwise
                new = os.open(link, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
                if _is_pipe(new, inode):
                    os.set_blocking(new, True)
                    return new
                os.close(new)
        except OSError:
            pass
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                pid = int(f.read().rpartition(b")")[2].split()[1])  # after the name: ppid
        except (OSError, ValueError, IndexError):
            return None
    return None


_channel = _Channel()
os.register_at_fork(after_in_child=_channel.forget)  # cheaper than getpid() on every event


class _GpuCap:
    """Caps PyTorch's CUDA allocator to ``$EDGEPROF_GPU_MEMORY`` once CUDA is in use.

    Asked at every phase and iteration boundary until done, and never before the workload
    initialised CUDA itself: capping calls into the driver, which would give a CPU-only
    script a CUDA context (hundreds of MiB on the GPU) it never asked for.  Nothing is
    imported: a workload without ``torch`` loaded is left alone."""

    def __init__(self) -> None:
        self.pending = True

    def forget(self) -> None:
        self.pending = True  # a forked child is a process of its own: it caps itself

    def check(self, force: bool = False) -> bool:
        if not self.pending:
            return False
        raw = os.environ.get(GPU_MEMORY_ENV)
        torch = sys.modules.get("torch")
        if raw is None:
            self.pending = False
            return False
        if torch is None:
            return False
        try:
            cuda = torch.cuda
            if not (cuda.is_initialized() or (force and cuda.is_available())):
                return False
            limit = int(raw)
            for i in range(cuda.device_count()):
                total = cuda.get_device_properties(i).total_memory
                cuda.set_per_process_memory_fraction(min(1.0, limit / total), i)
        except Exception:  # broad on purpose: the workload must not fail for it; only checked
            self.pending = False
            return False
        self.pending = False
        mark(GPU_CAPPED_MARK)
        return True


_gpu_cap = _GpuCap()
os.register_at_fork(after_in_child=_gpu_cap.forget)


def limit_gpu_memory() -> bool:
    """Cap this process's PyTorch CUDA allocations to the device's GPU memory now (under
    ``edgeprof run --gpu-memory``; a per-process memory fraction of each visible GPU), rather
    than at the next phase or iteration.  Returns whether it did: not under ``--gpu-memory``,
    without PyTorch loaded or CUDA available, or once done, it does nothing."""
    return _gpu_cap.check(force=True)


def _name(name: str, caller: str) -> str:
    """A name the protocol takes, as the script wrote it where it can be: one word of
    printable characters, at most MAX_NAME.  A space becomes ``␣`` and a control
    character its picture (tab ``␉``, DEL ``␡``); other whitespace or unprintable
    characters ``<U+XXXX>``.  Each had become ``_``: ``phase("a b")`` and ``phase("a_b")`` were
    then one phase ``a_b``, in silence.  A name that is not a ``str`` is a :class:`TypeError`
    at once (``mark(None)`` had been recorded as the phase ``None``), and one that is empty or
    only whitespace a :class:`ValueError` (``phase("")`` had become ``_``, one phase with a
    real ``phase("_")``)."""
    if not isinstance(name, str):
        if caller == "phase" and callable(name):  # ``@edgeprof.phase`` bare: fn as the name
            raise TypeError(
                'edgeprof.phase decorates with its name: @edgeprof.phase("NAME"), got the '
                f"function {getattr(name, '__qualname__', name)!r} as the name"
            )
        what = f"{name!r} ({type(name).__name__})"
        raise TypeError(f"edgeprof.{caller}: name must be a str, got {what}")
    if name.isprintable() and name.split() == [name]:  # one word: sent as written
        return _shortened(name)
    if not name.strip():
        raise ValueError(
            f"edgeprof.{caller}: name must have a character other than whitespace, got {name!r}"
        )
    return _shortened("".join(_visible(c) for c in name))


def sent_name(name: str) -> str:
    """A phase's ``name`` as this client sends it (:func:`_name`), as the runner and every
    report hold it: ``--latency-phase 'a b'`` gates ``phase("a b")``'s ``a␣b`` (it had
    been "no run has a phase 'a b'", a user's)."""
    return _name(name, "phase")


def _shortened(name: str) -> str:
    """``name`` within MAX_NAME characters, a longer one cut and ended with ``~`` and 8 hex
    digits of its hash, so that two long names stay two.  Cut alone, two 255-character
    names that differed after their 200th (``…attention``, ``…mlp``) were one phase of N 2,
    in silence (a tester's)."""
    if len(name) <= MAX_NAME:
        return name
    import hashlib  # here: the import costs every workload that imports edgeprof otherwise

    digest = hashlib.blake2s(name.encode("utf-8", "surrogatepass"), digest_size=4).hexdigest()
    return f"{name[: MAX_NAME - 9]}~{digest}"


def _visible(c: str) -> str:
    if c.isprintable() and not c.isspace():
        return c
    if c == " ":
        return "\u2423"
    if ord(c) < 0x20:
        return chr(0x2400 + ord(c))
    return "\u2421" if c == "\x7f" else f"<U+{ord(c):04X}>"


def _items(items: int | None) -> int | None:
    """``items`` as the count it is; anything else raised at once, whether or not the script
    runs under edgeprof (``items="x"`` had raised int()'s own ValueError, ``2.7`` counted 2,
    ``True`` 1 and ``"3"`` 3)."""
    if items is None:
        return None
    try:
        if isinstance(items, bool):
            raise TypeError
        n = operator.index(items)  # an int, or one of numpy's integers; not a float or str
    except TypeError:
        if callable(items):  # ``@edgeprof.iteration`` bare: the function came as ``items``
            raise TypeError(
                "edgeprof.iteration is called to decorate: @edgeprof.iteration() (or "
                f"items=N), got the function {getattr(items, '__qualname__', items)!r} as items"
            ) from None
        raise TypeError(
            f"edgeprof.iteration: items must be an int, got {items!r} ({type(items).__name__})"
        ) from None
    if not 0 <= n <= MAX_ITEMS:
        raise ValueError(f"edgeprof.iteration: items {items!r} is not a count from 0")
    return n


def active() -> bool:
    """True when the script runs under edgeprof and events reach it."""
    return _channel.ready()


def mark(name: str) -> None:
    """Record an instant (the runner notes the run's CPU time and memory then)."""
    cleaned = _name(name, "mark")
    if _channel.ready():
        t = time.monotonic()
        _channel.boundary(f"mark {cleaned} {t:.9f}", t)


def _is_async(fn: Callable[..., Any], what: str) -> bool:
    """Whether ``fn``, to be timed by a phase or iteration, is an ``async def``; a generator
    function is refused: its body runs as it is iterated, after the call returns, and timed
    around the call a phase or iteration would hold the making of the generator only.
    (``inspect`` is imported here, by a decorator only: 4.6 ms of the client's import.)"""
    import inspect

    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        name = getattr(fn, "__qualname__", repr(fn))
        raise TypeError(
            f"edgeprof.{what}: {name} is a generator function, whose body runs as it is "
            f"iterated, not when it is called: use 'with edgeprof.{what}(…):' inside it, or "
            "around the loop over it"
        )
    return inspect.iscoroutinefunction(fn)


_Self = TypeVar("_Self", bound="_AsyncWith")


class _AsyncWith(ContextDecorator):
    """``async with`` as ``with``: a phase's or iteration's boundaries are instants, with
    nothing to await."""

    def __enter__(self: _Self) -> _Self:
        raise NotImplementedError

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        raise NotImplementedError

    async def __aenter__(self: _Self) -> _Self:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)


class phase(_AsyncWith):
    """``with edgeprof.phase("load"):`` (or ``@edgeprof.phase("load")``): CPU time, memory
    and wall time between entry and exit are reported as the phase ``name``.  Phases may nest
    and repeat (repeats are merged by name; a phase nested in itself, as a recursive function
    under ``@phase``, counts its time once)."""

    def __init__(self, name: str) -> None:
        self.name = _name(name, "phase")
        self._pid = 0
        """The process that entered it: a forked child that leaves the ``with`` it inherited
        (``sys.exit()`` unwinds it) sends no end of its parent's phase (a user's child had
        ended its parent's 300 ms ``serve`` at 54 ms)."""

    def __call__(self, fn: _F) -> _F:
        """As a decorator; an ``async def`` is timed over its run, awaited (contextlib's
        decorator had timed the making of its coroutine: a 200 ms ``asyncio.sleep`` phase
        read 941 µs)."""
        if not _is_async(fn, "phase"):
            return super().__call__(fn)

        @functools.wraps(fn)
        async def timed(*args: Any, **kwargs: Any) -> Any:
            with self:
                return await fn(*args, **kwargs)

        return cast(_F, timed)

    def __enter__(self) -> phase:
        if _gpu_cap.pending:
            _gpu_cap.check()
        self._pid = os.getpid()
        if _channel.ready():
            t = time.monotonic()
            _channel.boundary(f"begin {self.name} {t:.9f}", t)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._pid == os.getpid() and _channel.ready():
            t = time.monotonic()
            _channel.boundary(f"end {self.name} {t:.9f}", t)
        if _gpu_cap.pending:  # a "load" phase that moved the model to the GPU: capped now
            _gpu_cap.check()


def _new_depth() -> contextvars.ContextVar[int]:
    return contextvars.ContextVar("edgeprof_iteration_depth", default=0)


_depth = _new_depth()
"""How many iterations are open in this thread (and asyncio task): a context variable, not a
``threading.local``, so that concurrent requests of one event loop, each its own task, stay
outermost each (a count per thread would make all but the first nested).  Its get and set
cost ~0.7 µs an iteration, below the write's 2-5 µs."""


def _forget_depth() -> None:
    """After a fork: a child forked inside an iteration (a ``multiprocessing`` worker) runs
    its own iterations, which are no sub-steps of its parent's."""
    global _depth
    _depth = _new_depth()


os.register_at_fork(after_in_child=_forget_depth)


class iteration(_AsyncWith):
    """``with edgeprof.iteration(items=batch_size):`` around one inference: its latency goes
    into the percentiles, ``items`` (optional) into the items/s throughput.  One that raises
    is counted as raised instead (out of both), and its exception propagates unchanged.

    Only the outermost iteration of a thread (or asyncio task) is one of the run: one opened
    inside another is sent as ``nested``, counted in one warning and in no figure.  Each had
    been an iteration too: a tester's 5 frames of 10 ms, each holding a 5 ms sub-step, and 3
    calls of 2 ms were 13 iterations with a p50 of 5.08 ms, 8 with these.  A sub-step is timed
    with :class:`phase`; the time such a phase's held boundaries waited for edgeprof is left
    out of the iteration's latency (:meth:`_start`), and kept in the wall time."""

    _kind = "iter"
    """The line's kind: an iteration of the run (``probe``: :func:`_probe`'s own)."""

    def __init__(self, items: int | None = None) -> None:
        self.items = _items(items)
        self._t0 = 0.0
        self._t1 = 0.0
        # One object entered again inside itself (``with it: … with it:``): each entry's
        # start, held seconds, nesting, depth, process and thread or task, the innermost last
        # (the inner entry had overwritten the outer's: 3 frames holding 3 sub-steps were 6
        # nested and no latency).
        self._open: list[_Entry] = []

    def __call__(self, fn: _F) -> _F:
        """As a decorator: a fresh iteration per call.  contextlib's one instance for every
        call let overlapping calls (threads, recursion) overwrite each other's start: a 0.3 s
        call overlapped by another 0.1 s in was recorded as 0.198 s."""
        items = self.items
        if _is_async(fn, "iteration"):  # timed over its run, as phase's (50 ms read 2.3 µs)

            @functools.wraps(fn)
            async def awaited(*args: Any, **kwargs: Any) -> Any:
                with iteration(items):
                    return await fn(*args, **kwargs)

            return cast(_F, awaited)

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            with iteration(items):
                return fn(*args, **kwargs)

        return cast(_F, timed)

    def __enter__(self) -> iteration:
        if _gpu_cap.pending:
            _gpu_cap.check()
        depth = _depth  # the one to count down at the exit, even after a fork
        n = depth.get()
        if _cost.pending and n == 0 and _channel.ready():
            _probe()
        depth.set(n + 1)
        held0 = _thread_held.get(get_ident(), 0.0) if _thread_held else 0.0  # its thread's
        self._t0 = time.monotonic()
        self._open.append((self._t0, held0, n > 0, depth, os.getpid(), _where()))
        return self

    @staticmethod
    def _start(t0: float, held0: float, t1: float) -> float:
        """The iteration's start as sent: later by the time its thread waited at held
        boundaries inside it (:meth:`_Channel.boundary`), which is edgeprof's, not the
        workload's (two held phases an iteration had added 1-3 ms to each)."""
        if not _thread_held:
            return t0
        waited = _thread_held.get(get_ident(), 0.0) - held0
        return min(t0 + max(waited, 0.0), t1)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        t1 = self._t1 = time.monotonic()
        started, held0, nested, depth, pid, _ = self._leave()
        self._t0 = started  # the entry this exit ends (its probe reads it)
        # Counted down, not reset to a token: a token from another context (an async
        # generator closed by another task) would raise into the workload.
        depth.set(depth.get() - 1)
        if pid != os.getpid() or not _channel.ready():
            return  # a forked child leaving its parent's iteration: the parent's to send
        t0 = self._start(started, held0, t1)
        if nested:  # whether it raised or not: the outer iteration's time holds it
            _channel.send(f"nested {t0:.9f} {t1:.9f}\n", t1)
            return
        if exc_type is not None:
            # Counted apart: a raised request's time is no latency of the workload (2 of 10
            # that raised had been in ITER, the percentiles and items/s).  The exception
            # goes on as it came (nothing is returned).
            _channel.send(f"raised {t0:.9f} {t1:.9f}\n", t1)
            return
        n = "" if self.items is None else f" {self.items}"
        _channel.send(f"{self._kind} {t0:.9f} {t1:.9f}{n}\n", t1)


    def _leave(self) -> _Entry:
        """The entry this exit ends: the last its thread (or asyncio task) made.  One object
        shared by threads had been a single stack: a thread's exit took another's entry,
        and two overlapping 50 ms and 150 ms iterations were sent as 100 ms each.  An entry
        left from elsewhere (an async generator closed by another task) is the last one."""
        here = _where()
        entries = self._open
        entry = next((e for e in reversed(entries) if e[5] == here), None)
        if entry is None:
            return entries.pop()
        entries.remove(entry)  # by identity first, in one step: another thread's pop may run
        return entry


_Entry = tuple[float, float, bool, contextvars.ContextVar[int], int, tuple[int, object]]
"""An open :class:`iteration`'s start, held seconds, nesting, depth variable, process and
:func:`_where`."""


def _where() -> tuple[int, object]:
    """The thread and, in a running event loop, the asyncio task code runs in: asyncio is
    asked only where the workload imported it (importing it took 37 ms of a client's start,
    ``python -X importtime``); 0.12 µs a call without a loop."""
    aio = sys.modules.get("asyncio")
    if aio is None or aio._get_running_loop() is None:
        return get_ident(), None
    return get_ident(), aio.current_task()


class _probe_iteration(iteration):
    _kind = "probe"


class _Cost:
    """Whether this process has yet to time its own iterations' cost (:func:`_probe`)."""

    def __init__(self) -> None:
        self.pending = True

    def forget(self) -> None:
        self.pending = True  # a forked child writes on its own: it times itself


_cost = _Cost()
os.register_at_fork(after_in_child=_cost.forget)


def _probe() -> None:
    """Time :data:`PROBES` empty iterations and send their cost: the time one spends outside
    its timed window (the object, the context variable, the clock, the line's formatting and
    its write), which a loop of iterations spends between them and so in its IT/S, but which
    no iteration's latency holds.  Measured here, in the run, as each process pays it: a
    tester's ``bench`` of an empty function read MEAN 117 ns beside IT/S 318 888 (3.1 µs an
    iteration, ~96 % of it this cost), with no word.  The median of the round trips: one
    preempted round is not the cost.  The two clock reads around each round are taken out
    (an empty pair's median)."""
    _cost.pending = False
    rounds, pairs = [], []
    for _ in range(PROBES):
        a = time.monotonic()
        b = time.monotonic()
        with _probe_iteration(1) as p:  # an item, as a bench's: its check is in the cost
            pass
        c = time.monotonic()
        pairs.append(b - a)
        rounds.append((c - b) - (p._t1 - p._t0))
    rounds.sort()
    pairs.sort()
    cost = max(0.0, rounds[PROBES // 2] - pairs[PROBES // 2])
    _channel.send(f"cost {cost:.9f} {PROBES}\n", time.monotonic())
