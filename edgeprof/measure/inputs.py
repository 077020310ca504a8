"""A run's inputs checked before anything starts: the command, its working directory, the
output descriptors and directory, and the sampling interval and timeout.  Each bad one is a
:class:`~edgeprof.errors.ConfigError` naming it (:func:`edgeprof.measure.runner.profile`
calls them first; ``run``'s request calls some before any run of a sweep)."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Protocol

from ..errors import ConfigError
from ..model import Limits, UserIds
from ..outfiles import check_path
from ..units import parse_duration, shown

DEFAULT_INTERVAL_S = 0.1
MIN_INTERVAL_S = 0.001
MIN_TIMEOUT_S = 0.001
"""The shortest ``--timeout``, the floor ``--interval`` has: ``--timeout 1e-9 -- true`` had
been accepted and ended ``exited``, where ``--timeout 0`` was refused: its deadline had passed
before edgeprof first waited, and that first wait only asks whether the main process has
exited, which ``true`` had.  A deadline is checked
once the spawn has returned (``--timeout 0.001 -- sleep 0.1`` ended ``timeout`` at 22 ms of
wall time): a timeout shorter than the spawn cannot be told from one that expired at once."""

FINER_SAMPLES = 10
"""Readings the suggested interval gives a run as short as the one that had too few."""


def finer_interval(interval: float, wall: float, minimum: float = MIN_INTERVAL_S) -> float:
    """An interval that reads a run of ``wall`` seconds :data:`FINER_SAMPLES` times: 1, 2 or
    5 × a power of ten at or under ``wall / FINER_SAMPLES``, never over a tenth of
    ``interval`` nor under ``minimum`` (the GPUs': :data:`edgeprof.model.gpu.GPU_MIN_INTERVAL_S`).
    A tenth of the interval alone had been suggested whatever the wall time ("--interval 1"
    for a 0.4 s run sampled every 10 s)."""
    want = min(interval / 10, wall / FINER_SAMPLES)
    if want <= minimum:
        return minimum
    e = 10.0 ** math.floor(math.log10(want))
    step = max(m for m in (1, 2, 5) if m * e <= want * (1 + 1e-9))
    return max(minimum, round(step * e, 12))


def command_args(command: object) -> tuple[str, ...]:
    """The command as a tuple of strings.  A string had been split into its characters
    (``"python3 x.py"`` ran ``p``), and a number among the arguments raised a TypeError."""
    if isinstance(command, (str, bytes)):
        raise ConfigError(
            f"command {command!r}: expected a list of arguments (shlex.split makes one of "
            "a shell-like string)"
        )
    if not isinstance(command, Iterable):
        raise ConfigError(f"command {command!r}: expected a list of arguments")
    given = tuple(command)
    for a in given:
        if not isinstance(a, (str, os.PathLike)) or isinstance(os.fspath(a), bytes):
            raise ConfigError(f"command {list(given)!r}: argument {a!r} is not a string")
    # A path object as subprocess takes it (a library user's Path("/bin/true") was refused).
    return tuple(str(os.fspath(a)) for a in given)


def check_arg_types(
    *,
    strings: Mapping[str, object],
    paths: Mapping[str, object] | None = None,
    env: object = None,
    run_as: object = None,
    device_cores: object = None,
    flags: Mapping[str, object] | None = None,
    on_wait: object = None,
    device_replaced: object = (),
    gpu_memory: object = None,
) -> None:
    """The library's arguments of the wrong type, each refused in one line before anything
    starts: a number as ``name`` had failed as a TypeError in the name check, a ``bytes``
    path or a number as ``out_dir`` as a TypeError, a plain tuple as ``run_as`` as an
    AttributeError at the launch (after the run's group existed), and ``device_cores="x"``
    was kept; ``on_wait="x"`` had been called once cores were busy (a TypeError in the
    lease), ``allow_over_host="no"`` had been true, and ``device_replaced="memory"`` dropped.
    ``strings``, ``paths`` and ``flags`` (the booleans) map each argument's name to its
    value; ``None`` is always allowed (not given), except for a flag.  A caller checks the
    arguments it has: ``edgeprof.profile`` those it reads before the runner checks them all."""
    for what, v in (flags or {}).items():
        if not isinstance(v, bool):  # "no" is true to Python: a switch is True or False
            raise ConfigError(f"{what}: expected True or False, not {shown(v)}")
    if on_wait is not None and not callable(on_wait):
        raise ConfigError(
            f"on_wait: expected a function of one str (print) or None, not {shown(on_wait)}"
        )
    if not isinstance(device_replaced, (tuple, list)) or not all(
        isinstance(o, str) for o in device_replaced
    ):
        raise ConfigError(
            "device_replaced: expected a tuple of option names (('--memory',)), not "
            f"{shown(device_replaced)}"
        )
    if gpu_memory is not None and (
        isinstance(gpu_memory, bool) or not isinstance(gpu_memory, (int, str))
    ):
        raise ConfigError(
            f"gpu_memory: expected bytes (a whole number), a size such as '4g', or None, not "
            f"{shown(gpu_memory)}"
        )
    for what, v in strings.items():
        if v is not None and not isinstance(v, str):
            raise ConfigError(f"{what}: expected a string or None, not {shown(v)}")
    for what, v in (paths or {}).items():
        path_like = isinstance(v, os.PathLike) and isinstance(os.fspath(v), str)
        if v is not None and not (isinstance(v, str) or path_like):
            raise ConfigError(
                f"{what}: expected a path (a str or a pathlib.Path) or None, not {shown(v)}"
            )
    if env is not None and not isinstance(env, Mapping):
        raise ConfigError(f"env: expected a mapping of names to values or None, not {shown(env)}")
    if device_cores is not None and (not _whole(device_cores) or device_cores == 0):
        raise ConfigError(
            f"device_cores: expected a whole number of cores, 1 or more, or None, not "
            f"{shown(device_cores)}"
        )
    if run_as is not None:
        _check_user_ids(run_as)


def _check_user_ids(run_as: object) -> None:
    """``run_as``: a :class:`UserIds` of whole numbers, its groups a tuple; the field that is
    not is named (a ``UserIds(-1, -1, ())`` had been "not a UserIds")."""
    expected = "expected edgeprof.UserIds(uid, gid, groups) of whole numbers or None"
    if not isinstance(run_as, UserIds):
        raise ConfigError(f"run_as: {expected}, not {shown(run_as)}")
    for field in ("uid", "gid"):
        if not _whole(getattr(run_as, field)):
            value = getattr(run_as, field)
            raise ConfigError(
                f"run_as: its {field} {value!r} is not a whole number (0 or more): {expected}"
            )
    if not isinstance(run_as.groups, tuple) or not all(_whole(g) for g in run_as.groups):
        raise ConfigError(
            f"run_as: its groups {run_as.groups!r} are not a tuple of whole numbers: {expected}"
        )


def _whole(v: object) -> bool:
    """A non-negative int, not a bool (``True`` is an int to Python, never a count here)."""
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def check_limits_given(limits: object) -> Limits:
    """The run's limits: a :class:`~edgeprof.model.Limits`, or ``None`` for none.  A dict
    (``{"cpus": 1}``) had failed as ``AttributeError: 'dict' object has no attribute …``."""
    if limits is None:
        return Limits()
    if not isinstance(limits, Limits):
        raise ConfigError(
            f"limits: expected edgeprof.Limits (Limits(cpus=1, memory='512m')) or None, not "
            f"{shown(limits)}"
        )
    return limits


class HasFileno(Protocol):
    """An open file object, as :mod:`subprocess` takes one for a child's output."""

    def fileno(self) -> int: ...


Output = int | HasFileno | None
"""What ``stdout=`` and ``stderr=`` take: a descriptor, a file object, ``None``."""


def output_fds(stdout: object, stderr: object) -> tuple[int | None, int | None]:
    """The workload's output descriptors: ``None`` (edgeprof's own), an open descriptor,
    ``subprocess.DEVNULL``, or an object whose ``fileno()`` gives an open one (a file,
    ``sys.stdout`` where it has one), flushed first, as :mod:`subprocess` takes them (only a
    descriptor had been: ``stdout=open(...)`` and ``sys.stdout`` were refused, a notebook
    user's).  ``subprocess.PIPE`` (-1) had been taken, and nothing read the pipe: the
    workload blocked on it.  A closed one (``stdout=9999``) had failed at the launch, as
    ``LaunchError: could not start echo: Bad file descriptor`` naming neither.
    ``stderr=subprocess.STDOUT`` joins stderr to the workload's stdout, as :mod:`subprocess`
    does (edgeprof's own descriptor 1 where ``stdout`` is ``None``): it captures nothing, and
    had been refused as though it did (a library user's)."""
    out = _output_fd("stdout", stdout)
    if type(stderr) is int and stderr == subprocess.STDOUT:
        return out, 1 if out is None else out
    return out, _output_fd("stderr", stderr)


def _output_fd(what: str, given: object) -> int | None:
    if given is None or given == subprocess.DEVNULL:
        return None if given is None else subprocess.DEVNULL
    fd = _fileno(given)
    if isinstance(fd, bool) or not isinstance(fd, int) or fd < 0:
        raise ConfigError(
            f"{what}={_named(given)}: expected an open file descriptor or file (open(), "
            "f.fileno()), subprocess.DEVNULL or None; edgeprof does not capture the "
            "workload's output"
        )
    try:
        os.fstat(fd)
    except (OSError, OverflowError):  # EBADF; OverflowError: beyond a C int
        raise ConfigError(f"{what}={given!r}: not an open file descriptor") from None
    return fd


def _named(given: object) -> str:
    """``given`` as the caller wrote it: ``subprocess.PIPE`` and ``subprocess.STDOUT`` are
    -1 and -2 to Python, and ``stdout=-1`` had named neither."""
    for name in ("PIPE", "STDOUT"):
        if type(given) is int and given == getattr(subprocess, name):
            return f"subprocess.{name}"
    return repr(given)


def _fileno(given: object) -> object:
    """``given``'s descriptor where it is a file object with one (``None``: it has none, as
    a ``StringIO``), else ``given`` itself; the object is flushed, so what the caller wrote
    to it comes before the workload's output."""
    fileno = getattr(given, "fileno", None)
    if isinstance(given, int) or not callable(fileno):
        return given
    try:
        fd = fileno()
        flush = getattr(given, "flush", None)
        if callable(flush):
            flush()
    except (OSError, ValueError):  # io.UnsupportedOperation (StringIO), a closed file
        return None
    return fd


def check_not_a_sweep(out_dir: str | Path | None) -> None:
    """A single run's ``--out`` holds no sweep: report and compare read a directory through
    its ``sweep.json``, so this run's ``result.json`` beside it was never shown (an older
    sweep's rows were, without a word)."""
    if out_dir is None:
        return
    # A name too long for exists(), or under a directory this user may not enter: each had
    # been a traceback (ENAMETOOLONG, EACCES).
    check_path(Path(out_dir), "write to output directory")
    if (Path(out_dir) / "sweep.json").exists():
        raise ConfigError(
            f"--out {out_dir} holds a sweep (sweep.json): give this run a directory of its own"
        )


def parse_times(
    interval: float | str | None, timeout: float | str | None
) -> tuple[float, float | None]:
    """The sampling interval (``None``: the default) and the timeout, in seconds; either one
    unreadable (``""`` too) or under its 1 ms floor is a :class:`ConfigError`."""
    least = (MIN_INTERVAL_S, "1ms")
    seconds = (
        DEFAULT_INTERVAL_S
        if interval is None
        else parse_duration(interval, "sampling interval", least)
    )
    floor = (MIN_TIMEOUT_S, "1ms")
    return seconds, None if timeout is None else parse_duration(timeout, "timeout", floor)


def check_cwd(cwd: str | Path | None, run_as: UserIds | None = None) -> Path | None:
    """The workload's working directory (``--cwd``), which must exist, and which the user
    the workload runs as (``run_as``: sudo's) can enter: the backend changes into it as
    root, before it drops to that user, so a directory the user may not search had been a
    way to read what only root could (seen: a file under a root-only 0700 directory)."""
    if cwd is None:
        return None
    p = Path(cwd)
    check_path(p, "use --cwd")  # before is_dir(): EACCES had been a traceback
    if not p.is_dir():
        raise ConfigError(f"--cwd {cwd}: no such directory")
    if run_as is not None and not enters(p, run_as):
        barred = first_barred(p.absolute(), run_as)  # the mode bits name where, if they can
        raise ConfigError(
            f"--cwd {cwd}: user {run_as.uid}, whom the workload runs as, cannot enter "
            f"{barred or p}"
        )
    return p


def enters(path: Path, user: UserIds) -> bool:
    """Whether ``user`` can change into ``path``, asked of the kernel: a shell started as
    that user tries (ACLs and the path as given count, as they will for the workload; the
    mode bits alone had refused a directory an ACL opens)."""
    try:
        done = subprocess.run(
            ["/bin/sh", "-c", 'cd -- "$1"', "sh", str(path)],
            user=user.uid,
            group=user.gid,
            extra_groups=list(user.groups),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def first_barred(
    path: Path, user: UserIds, stat: Callable[[Path], os.stat_result] = os.stat
) -> Path | None:
    """The first directory on ``path`` (from ``/``) that ``user`` may not search (execute
    permission by the mode bits: owner, then group, then others; ACLs are not read), or
    ``None`` where every one lets it through.  Root passes every directory."""
    if user.uid == 0:
        return None
    groups = {user.gid, *user.groups}
    for d in (*reversed(path.parents), path):
        st = stat(d)
        if st.st_uid == user.uid:
            bit = st.st_mode & 0o100
        elif st.st_gid in groups:
            bit = st.st_mode & 0o010
        else:
            bit = st.st_mode & 0o001
        if not bit:
            return d
    return None


def looked_up_from(prog: str, cwd: str | Path | None) -> str:
    """Where a relative path of a command was looked up, said after its error: under
    ``--cwd`` it is the workload's directory's, not edgeprof's (``--cwd sub --
    ./only_top.sh`` had said only "command not found", of a script beside edgeprof)."""
    if cwd is None or Path(prog).is_absolute() or "/" not in prog:
        return ""
    there = f" (looked up from --cwd {cwd}: {Path(cwd) / prog}"
    try:
        here = Path(prog).exists()
    except OSError:
        here = False
    if here:  # where edgeprof was started: the path the user probably meant
        return f"{there}; {prog} from here is {Path(prog).absolute()}: give that path)"
    return f"{there})"


def check_command(command: tuple[str, ...], env: Mapping[str, str], cwd: Path | None) -> None:
    """The program exists and is executable here (host backends), else a ConfigError."""
    if not command or not command[0]:
        raise ConfigError("no command given: edgeprof run [OPTIONS] -- COMMAND [ARGS]...")
    prog = command[0]
    if "\0" in "".join(command):
        raise ConfigError("the command contains a NUL byte")
    if "/" in prog:
        path = Path(prog) if cwd is None or Path(prog).is_absolute() else cwd / prog
        try:
            found = path.is_file()
        except PermissionError:  # a directory on the way this user may not search
            raise ConfigError(f"command not accessible: {prog} (permission denied)") from None
        if not found:
            # A device or a FIFO exists: "not found" of /dev/null had been untrue (a tester's).
            what = (
                "is a directory"
                if path.is_dir()
                else "is not a regular file"
                if path.exists()
                else "not found"
            )
            raise ConfigError(f"command {what}: {prog}{looked_up_from(prog, cwd)}")
        if not os.access(path, os.X_OK):
            raise ConfigError(f"command is not executable: {prog}{looked_up_from(prog, cwd)}")
    elif shutil.which(prog, path=env.get("PATH", os.defpath)) is None:
        raise ConfigError(f"command not found: {prog}")
