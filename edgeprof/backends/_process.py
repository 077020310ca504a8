"""Spawning the workload and reaping it precisely; shared by every local backend."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import re
import resource
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ..callerenv import callers_environ
from ..errors import BackendError, LaunchError
from ..model import Counters, RunSpec, UserIds
from ..openfiles import workload_soft_limit
from . import cgroup_parse
from . import cgroupfs as fs
from .base import RunHandle

_POLL_MAX_MS = 2**31 - 1
"""The longest ``poll()`` wait: its timeout is a C ``int`` of milliseconds."""


_PR_SET_PDEATHSIG = 1
"""``<linux/prctl.h>``: the signal a process gets when the thread that forked it exits."""


class Process:
    """The workload's main process.

    ``join_fds`` are open write descriptors of ``cgroup.procs`` files: the child writes
    ``0`` ("myself") to each between fork and exec, so it is in the run's groups before
    the program's first instruction.  With ``run_as`` it then drops to
    that identity (supplementary groups, gid, uid: each step still privileged enough for
    the next) — after the joins, which a dropped user could not do.  The pre-exec hook does
    nothing else — no allocation-heavy Python runs in the forked child.

    Where that hook runs, the child also stamps, on a pipe read once the exec succeeded,
    the monotonic clock once it has joined, its own thread CPU clock (which a fresh task
    starts at 0 at the fork) just before it joins, and both again just before the exec:
    :attr:`joined`, :attr:`spawn_cpu_ns` and :attr:`started`.  Measured by the child
    itself, these cannot take in the workload's time, however late the parent gets to read
    them: the parent's own reading of the group after the exec had (a 2 ms spin read
    1.35 ms of CPU and ``true`` 113 % of one CPU on a loaded 2-core host).
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path | None,
        stdout: int | None,
        stderr: int | None,
        join_fds: Sequence[int] = (),
        new_session: bool = False,
        pass_fds: Sequence[int] = (),
        run_as: UserIds | None = None,
        affinity: Sequence[int] | None = None,
        rusage: bool = False,
        die_with_parent: bool = False,
    ) -> None:
        fds = tuple(join_fds)
        # SIGKILL to the workload when edgeprof is gone (PR_SET_PDEATHSIG): a backend with no
        # group to kill later had left a SIGKILLed edgeprof's workload running under init.
        # Set last (a change of identity clears it), and checked against a parent that died
        # before it was set.  The signal is tied to the thread that spawns: profile() runs
        # the whole run in that thread.
        prctl = ctypes.CDLL(None, use_errno=True).prctl if die_with_parent else None
        parent = os.getpid()
        cores = None if affinity is None else frozenset(affinity)
        self.rusage: resource.struct_rusage | None = None
        """With ``rusage``: the main process's own and its reaped descendants' resource use,
        from ``wait4`` when it is reaped (the process backend's exact CPU time)."""
        self._wait4 = rusage
        # The first cgroup.procs write of a burst waits for an RCU grace period (the kernel's
        # cgroup_threadgroup_rwsem; ~12 ms measured on our 6.18 hosts).  That is edgeprof's
        # cost, not the workload's: the child stamps the clock once it has joined and again
        # just before the exec, and wall time starts at the second.  CLOCK_MONOTONIC is
        # system-wide, so the stamps compare with the parent's clock.
        nofile = workload_soft_limit()  # the user's own, where edgeprof raised its (openfiles)
        hook = bool(
            fds or run_as is not None or cores is not None or prctl is not None
            or nofile is not None
        )
        stamp_r, stamp_w = os.pipe() if hook else (-1, -1)

        def join() -> None:
            # Read before the joins, the thread CPU clock also charges the CPU the child ran
            # since its last accounting to the group it is in, the caller's (the kernel's
            # task_sched_runtime() calls update_curr()).  Unread, the move charged it to the
            # run's (update_curr() at the migration, or the next tick): the child's work from
            # the fork (its copy-on-write faults in edgeprof's heap) was in the run's CPU
            # time and not in its wall time, and a library caller's `echo x` read 114 % of
            # one CPU (2.55 ms of CPU in 2.23 ms; 31 of 40 runs over 100 %).  Everything
            # from here on is the run's group's, and subtracted as the spawn's.
            joined_cpu = time.thread_time_ns()
            for fd in fds:
                os.write(fd, b"0")
            joined = time.monotonic_ns()
            if nofile is not None:
                resource.setrlimit(
                    resource.RLIMIT_NOFILE,
                    (nofile, resource.getrlimit(resource.RLIMIT_NOFILE)[1]),
                )
            if cores is not None:  # inherited by every descendant, from the first instruction
                os.sched_setaffinity(0, cores)
            if run_as is not None:
                os.setgroups(run_as.groups)
                os.setgid(run_as.gid)
                os.setuid(run_as.uid)
                if cwd is not None:  # as the user: a directory barred to it stays barred
                    os.chdir(cwd)
            if prctl is not None:
                prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
                if os.getppid() != parent:
                    os._exit(1)  # edgeprof died before: nothing would end this process
            stamp = time.monotonic_ns()
            os.write(stamp_w, b"%d %d %d %d" % (joined, stamp, joined_cpu, time.thread_time_ns()))
            os.close(stamp_w)  # the workload inherits no end of edgeprof's pipe

        before = time.monotonic()
        spawned = False
        try:
            self._popen = subprocess.Popen(
                list(command),
                env=dict(env),
                cwd=cwd if run_as is None else None,  # else entered as the user, in join()
                stdin=None,
                stdout=stdout,
                stderr=stderr,
                preexec_fn=join if hook else None,
                pass_fds=((stamp_w,) if hook else ()) + tuple(pass_fds),
                start_new_session=new_session,
                close_fds=True,
            )
            spawned = True
        except FileNotFoundError as exc:
            raise LaunchError(_not_found(command[0], env, cwd)) from exc
        except PermissionError as exc:
            raise LaunchError(f"permission denied: {command[0]}") from exc
        except subprocess.SubprocessError as exc:
            # The pre-exec join failed: the kernel refused to move the child into the group,
            # or (run as a user) the identity or --cwd as that user.
            where = "inside its cgroup" + ("" if run_as is None else f" as user {run_as.uid}")
            raise LaunchError(f"could not start {command[0]} {where}: {exc}") from exc
        except OSError as exc:
            why = exc.strerror or str(exc)
            if exc.errno == errno.ENOEXEC and _no_shebang(command[0], cwd):
                # A shell runs such a file itself; exec cannot (a user's `noshebang.sh`).
                why += f": it has no #! line (add one, or give its interpreter: sh {command[0]})"
            raise LaunchError(f"could not start {command[0]}: {why}") from exc
        finally:
            if hook:
                os.close(stamp_w)
                if not spawned:  # no stamp will be read: do not leak the pipe's read end
                    os.close(stamp_r)
        self.started = before
        """``time.monotonic()`` just before the exec (the child's stamp), else before the
        spawn: the run's wall time starts here."""
        self.joined = before
        """``time.monotonic()`` once the child had joined the run's groups (its stamp), else
        before the spawn."""
        self.spawn_cpu_ns: tuple[int, int] | None = None
        """The child's thread CPU time (ns, from its fork) just before it joined and just
        before the exec; ``None`` without the pre-exec hook (nothing stamped)."""
        if hook:
            try:
                # One read: the child's one write is atomic (under PIPE_BUF); reading to
                # the end could wait on a copy of the write end that another thread's fork
                # holds until its own exec.
                stamp = os.read(stamp_r, 128)
            finally:
                os.close(stamp_r)
            parsed = parse_stamp(stamp)
            if parsed is not None:
                self.joined, self.started, self.spawn_cpu_ns = parsed
        self.pid = self._popen.pid
        try:
            self._pidfd: int | None = os.pidfd_open(self.pid)
        except (AttributeError, OSError):  # Linux < 5.3: fall back to Popen's polling wait
            self._pidfd = None

    @classmethod
    def for_run(
        cls,
        spec: RunSpec,
        *,
        join_fds: Sequence[int] = (),
        new_session: bool = False,
        pin: bool = False,
        rusage: bool = False,
        die_with_parent: bool = False,
    ) -> Process:
        """The workload of ``spec`` (its command, environment over edgeprof's, directory,
        output, events descriptors and identity), spawned by a local backend; ``pin``: its
        cpuset held by CPU affinity (a backend with no cpuset controller)."""
        return cls(
            spec.command,
            env={**callers_environ(), **spec.env},
            cwd=spec.cwd,
            stdout=spec.stdout,
            stderr=spec.stderr,
            join_fds=join_fds,
            new_session=new_session,
            pass_fds=spec.pass_fds,
            run_as=spec.run_as,
            affinity=spec.limits.cpuset if pin else None,
            rusage=rusage,
            die_with_parent=die_with_parent,
        )

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    def wait(self, timeout: float | None) -> int | None:
        """Block until the process exits (precisely: a pidfd wakes us at the exit)."""
        if self._popen.returncode is not None:
            return self._popen.returncode
        if self._pidfd is not None:
            poller = select.poll()
            poller.register(self._pidfd, select.POLLIN)
            deadline = None if timeout is None else time.monotonic() + timeout
            while True:
                left = None if deadline is None else max(0, deadline - time.monotonic())
                # poll() takes a C int of ms: a --timeout over 24.8 days raised OverflowError.
                ms = None if left is None else min(_POLL_MAX_MS, int(left * 1000))
                if poller.poll(ms):
                    return self._reap()
                if ms is not None and ms < _POLL_MAX_MS:
                    return None
        if self._wait4:
            deadline = None if timeout is None else time.monotonic() + timeout
            while not self.exited():
                if deadline is not None and time.monotonic() >= deadline:
                    return None
                time.sleep(0.001)
            return self._reap()
        try:
            return self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def exited(self) -> bool:
        """The main process has exited (a zombie waiting for us), without reaping it."""
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None

    def _reap(self) -> int:
        """Collect the exit status (the process has exited or is being killed); with
        ``rusage``, through ``wait4`` so its resource use is kept."""
        if not self._wait4 or self._popen.returncode is not None:
            return self._popen.wait()
        _, status, usage = os.wait4(self.pid, 0)
        self.rusage = usage
        # Popen did not reap it: give it the status, as its own wait() would have.
        self._popen.returncode = os.waitstatus_to_exitcode(status)
        return self._popen.returncode

    def in_callers_group(self) -> bool:
        """In edgeprof's process group now: spawned without a session of its own, and not
        moved out of it since (a workload's own ``setsid``, ``setpgid``)."""
        if self._popen.returncode is not None:  # reaped: its pid may be another's
            return False
        try:
            return os.getpgid(self.pid) == os.getpgrp()
        except ProcessLookupError:
            return False

    def signal(self, sig: int) -> None:
        if self._popen.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._popen.send_signal(sig)

    def reap(self) -> None:
        """Collect the exit status after a kill (the process is gone or going)."""
        if self._popen.returncode is None:
            self._reap()

    def close(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None


def _no_shebang(program: str, cwd: Path | None) -> bool:
    """Whether ``program`` (a path, as exec was given it) is a file that does not start with
    ``#!``: a script exec refuses as ``ENOEXEC``, not a binary of another machine's."""
    path = Path(program) if cwd is None else Path(cwd, program)
    try:
        with path.open("rb") as f:
            head = f.read(64)
    except OSError:
        return False
    return not head.startswith(b"#!") and not head.startswith(b"\x7fELF")


def parse_stamp(stamp: bytes) -> tuple[float, float, tuple[int, int]] | None:
    """The child's stamp (``joined started cpu_at_join cpu_before_exec``, ns) as
    (joined s, started s, (cpu_at_join, cpu_before_exec) ns); ``None`` where it did not
    come whole (a child that died in its hook)."""
    try:
        joined, started, cpu_joined, cpu_exec = (int(w) for w in stamp.split())
    except ValueError:
        return None
    return joined / 1e9, started / 1e9, (cpu_joined, cpu_exec)


def take_exec(
    run: RunHandle,
    proc: Process,
    read: Callable[[], Counters],
    since_fork: bool = False,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Start ``run`` at its workload's exec: its ``started``, ``spawn_cpu_us`` and
    ``spawn_s`` from the child's own stamps (:class:`Process`), and ``at_exec``, the
    counters ``read`` as soon as the exec has succeeded (the sampler's first row).

    The CPU time left out of the run is what the child itself spent from its joining (its
    clock read just before the joins, which charges its CPU until then to the caller's
    group: :class:`Process`; the process backend, whose ``wait4`` counts a process from its
    ``since_fork``: from its fork) to its stamp before the exec, read on its own thread CPU
    clock: exact, and none of the workload's.  The exec's teardown of the child's copy of
    edgeprof's address space comes after that stamp and cannot be measured from either side
    without a race (the parent reads only once the exec is done, by when the workload may
    have run for milliseconds on a loaded host): it stays in the run's CPU time, measured as
    ``run -- true`` less ``perf stat``'s (docs/method.md).  The wall time starts at the same
    stamp, so it covers all the CPU time counted: a single thread cannot read over 100 %.
    The parent's reading after the exec had taken, on a loaded 2-core host, a 2 ms spin's
    own CPU into the spawn (1.35 and 1.74 ms read) and started the wall time late (``true``
    at 113 %, a ``sh`` loop at 179.5 %)."""
    run.started = proc.started
    if proc.spawn_cpu_ns is not None:
        joined_cpu, exec_cpu = proc.spawn_cpu_ns
        run.spawn_cpu_us = (exec_cpu - (0 if since_fork else joined_cpu)) // 1000
        run.spawn_s = max(0.0, proc.started - proc.joined)
    before = clock()
    counters = read()
    run.at_exec = ((before + clock()) / 2, counters)


def end_workload(proc: Process | None, kill: Callable[[], None], warnings: list[str]) -> None:
    """The end of a run handle's workload, on every path: ``kill`` what is left of the tree
    (an aborted run, by an exception or Ctrl-C, may still have processes: no leftovers), a
    tree that survives it said in ``warnings``, then the main process's descriptor closed."""
    if proc is None:
        return
    try:
        kill()
    except BackendError as exc:
        warnings.append(str(exc))
    proc.close()


HARD_STOPS = frozenset({signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT})
_UNCATCHABLE = {signal.SIGKILL, signal.SIGSTOP}
_NOT_ENDING = {signal.SIGCHLD, signal.SIGCONT, signal.SIGURG, signal.SIGWINCH}  # default: none
_JOB_CONTROL = {signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU}  # default: stop (the shell's)
_FAULTS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL, signal.SIGTRAP}
_FAULTS |= {signal.SIGSYS, signal.SIGABRT}
"""A fault of edgeprof's own (faulthandler's): a handler that returns re-runs the faulting
instruction (SIGSYS: seccomp's), and abort()'s SIGABRT ends the process after its handler
anyway."""
_OWN_OUTPUT = {signal.SIGPIPE}
"""Python ignores it; a closed pipe is an EPIPE that :mod:`edgeprof.cli.outcome` handles
(``edgeprof run … | head -1``)."""
_RUNTIMES = {signal.SIGPROF, signal.SIGVTALRM, *range(signal.SIGRTMIN, signal.SIGRTMAX + 1)}
"""Sampling profilers' timers and runtimes' real-time signals, the ones a C library of the
calling process handles with ``sigaction``: ``signal.getsignal`` then still reads
``SIG_DFL`` (Python's own table), and a guard taking one over restores the default after
the run, so that the next one kills the library's caller (a reviewer showed it with
SIGPWR set to ignored through libc: "Power failure" after one ``profile()``).  No one
sends these to edgeprof from outside.  The signals kept (SIGXCPU, SIGPWR, SIGIO, …) have
the same blind spot, for a library that would handle one of them in C."""
NOT_STOPS = frozenset(
    _UNCATCHABLE | _NOT_ENDING | _JOB_CONTROL | _FAULTS | _OWN_OUTPUT | _RUNTIMES
)
STOP_SIGNALS = frozenset(signal.valid_signals()) - NOT_STOPS
"""What stops edgeprof with a result and no leftovers: every signal whose default action
ends a process, that edgeprof can catch (signal(7)) and that is sent from outside —
Ctrl-C, a kill, a closed terminal (SIGHUP), Ctrl-\\, RLIMIT_CPU's SIGXCPU (``ulimit -t`` in
a CI job), SIGALRM, SIGUSR1/2, SIGIO, SIGPWR and SIGSTKFLT — all but :data:`HARD_STOPS` only
at their default (a caller's own handler keeps them; SIGXFSZ, which Python ignores, stays
ignored).  Left at their default, SIGHUP and SIGQUIT had ended edgeprof mid-run with the
workload still running under init, 8 groups left behind and no ``result.json``; SIGUSR1
and SIGALRM later did the same, and then SIGXCPU (exit 152), a daemon the workload started
running on until a later ``gc``."""


def leave_stops_to_main_thread() -> None:
    """Block :data:`STOP_SIGNALS` in the calling (helper) thread.  The kernel hands a
    process's signal to any thread that does not block it, and Python runs its handler only
    in the main thread: delivered to a helper thread, it would not wake the main thread
    from its wait on the workload (seen: SIGINT, SIGINT, SIGTERM in a burst left edgeprof
    waiting)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)


def signal_pids(pids: Sequence[int], sig: int = signal.SIGKILL) -> None:
    """Signal each pid; never 0, 1, negative or edgeprof itself (a corrupt list is no licence
    to signal a process group or init)."""
    me = os.getpid()
    for pid in pids:
        if pid <= 1 or pid == me:
            continue
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def terminate_pids(pids: Sequence[int]) -> None:
    """SIGTERM each pid, then SIGCONT, as coreutils' ``timeout`` does: a stopped process
    cannot act on its SIGTERM until it is continued (a tester's ``kill -STOP $$`` under
    ``--timeout 3`` waited out the whole grace for its SIGKILL, told that ``--kill-grace``
    would give it longer).  The signals are queued: a stopped process continues with its
    SIGTERM pending, and a running one ignores the SIGCONT."""
    signal_pids(pids, signal.SIGTERM)
    signal_pids(pids, signal.SIGCONT)


def kill_members(groups: Sequence[Path], timeout: float = 10.0) -> None:
    """SIGKILL whatever ``groups``' ``cgroup.procs`` list until they are empty or ``timeout``
    runs out: for groups with no ``cgroup.kill`` (or whose processes a dead daemon or a dead
    edgeprof left behind), since no process of a run may outlive it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listed = (fs.read_optional(g / "cgroup.procs") or "" for g in groups)
        pids = {p for text in listed for p in cgroup_parse.parse_pids(text)}
        if not pids:
            return
        signal_pids(sorted(pids))
        time.sleep(0.005)


def _not_found(prog: str, env: Mapping[str, str], cwd: str | Path | None) -> str:
    """Why exec said ENOENT: the program is missing, or it is there and its ``#!``
    interpreter is not (the kernel reports both alike)."""
    if "/" in prog:
        found: str | None = str(Path(cwd or ".") / prog)
    else:
        found = shutil.which(prog, path=env.get("PATH", os.defpath))
    if found is not None and os.path.isfile(found):
        return f"cannot start {prog}: {_missing_interpreter(found)}"
    return f"command not found: {prog}"


def _missing_interpreter(path: str) -> str:
    """The ``#!`` line's interpreter that exec did not find, named; a line ending in a
    carriage return (a script saved with Windows line ends: ``/bin/sh\\r``, which looks
    right in every editor) says so."""
    try:
        with open(path, "rb") as f:
            line = f.readline(256).rstrip(b"\n")
    except OSError:
        line = b""
    # The kernel splits the line at the first blank or tab (load_script).
    words = re.split(rb"[ \t]", line[2:].lstrip(b" \t"), maxsplit=1) if line[:2] == b"#!" else []
    interpreter = os.fsdecode(words[0]) if words and words[0] else None
    if interpreter is None:
        return "the interpreter its #! line names was not found"
    if interpreter.endswith("\r") and os.path.exists(interpreter[:-1]):
        return (
            f"its #! line ends in a carriage return (Windows line ends): there is no "
            f"interpreter {interpreter[:-1]!r} + '\\r' (dos2unix, or save it with LF line ends)"
        )
    if os.path.exists(interpreter):  # there: exec's ENOENT was its own loader's
        return f"its #! interpreter {interpreter} could not be started (a file it needs is missing)"
    return f"the interpreter its #! line names ({interpreter!r}) was not found"


def status_bytes(key: str, status: str) -> int | None:
    """The ``key`` line of a ``/proc/PID/status`` (kB there), in bytes; None where the file
    or the line is missing (``RssShmem`` is Linux ≥ 4.5)."""
    try:
        with open(status, encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
