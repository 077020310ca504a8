"""A cgroup v2 parent delegated by systemd: where systemd is PID 1, root asks it for one.

systemd owns the cgroup tree of a host it manages.  A group another process makes at the
top (``/edgeprof``) is one systemd does not know; its delegation rules (systemd.io's
"Control Group APIs and Delegation") allow writing only below a unit with ``Delegate=yes``.
So root's edgeprof asks systemd for a transient scope with ``Delegate=yes`` and makes its run
groups inside it: ``systemd-run --scope``, the same call a user makes by hand (no D-Bus
library in edgeprof; systemd-run talks to PID 1 itself).

A scope holds processes, not groups: its first process is a *holder* (``cat`` reading a
pipe only edgeprof writes to), which edgeprof moves into the scope's leaf ``holder`` so the
scope may enable controllers for the run groups beside it (no internal processes).  The
holder lives exactly as long as this process: however edgeprof ends, the kernel closes the
pipe, the holder reads end-of-file and exits, and systemd stops the empty scope and removes
its directory with every empty group below it (``unit_prune_cgroup``).  One scope serves
every run of the process, named after it (``edgeprof-<pid>-<start>.scope``).
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import BackendError
from . import cgroupfs as fs
from .owner import this_process

HOLDER_LEAF = "holder"
START_TIMEOUT_S = 60.0
"""systemd answers in milliseconds on a host; a TCG-emulated guest booting took 1-2 s."""
HOLD_SCRIPT = 'while IFS= read -r l; do echo "$l"; done </proc/self/cgroup && exec cat >/dev/null'
"""The holder: says where systemd put it, then waits for edgeprof's end (end-of-file).

It forks nothing: a child that printed the placement (``cat /proc/self/cgroup``) can still
be in the scope's group, exiting, when edgeprof moves the holder out and enables the
controllers, which the kernel then refuses (``EBUSY``: the group still has tasks); a busy
emulated guest hit that in CI.  The shell's builtins read the file; ``exec`` replaces it."""


def systemd_manages(run_dir: Path = Path("/run/systemd/system")) -> bool:
    """systemd is PID 1 (``sd_booted``'s test: it creates this directory at boot)."""
    return run_dir.is_dir()


@dataclass(frozen=True)
class Scope:
    """A delegated scope and the holder that keeps it; :meth:`close` ends both."""

    unit: str
    path: Path
    holder: subprocess.Popen[bytes]

    def close(self) -> None:
        """End the holder (end-of-file on its pipe); systemd then removes the scope."""
        _end(self.holder)


def _end(holder: subprocess.Popen[bytes]) -> None:
    if holder.stdin is not None and not holder.stdin.closed:
        holder.stdin.close()
    try:
        holder.wait(timeout=10)
    except subprocess.TimeoutExpired:
        holder.kill()
        holder.wait()


def unit_name() -> str:
    """``edgeprof-<pid>-<start>.scope``: this process's, whose name no run group shares."""
    o = this_process()
    return f"edgeprof-{o.pid}-{o.start if o.start is not None else 0}.scope"


def holder_command(systemd_run: str, unit: str) -> list[str]:
    return [
        systemd_run, "--scope", "--quiet", "--collect", f"--unit={unit}",
        "--description=edgeprof runs", "-p", "Delegate=yes", "--",
        "/bin/sh", "-c", HOLD_SCRIPT,
    ]  # fmt: skip


def parse_placement(line: str) -> str | None:
    """The unified-hierarchy path in a ``/proc/<pid>/cgroup`` line (``0::/a/b.scope``)."""
    hid, _, rest = line.strip().partition(":")
    controllers, _, path = rest.partition(":")
    if hid != "0" or controllers or not path.startswith("/"):
        return None
    return path


def start_scope(root: Path, timeout: float = START_TIMEOUT_S) -> Scope:
    """Ask systemd for this process's delegated scope; :class:`BackendError` if it says no.

    The holder is moved into the scope's leaf before anything else is written there.
    """
    systemd_run = shutil.which("systemd-run")
    if systemd_run is None:
        raise BackendError("systemd-run is not on PATH")
    unit = unit_name()
    holder = subprocess.Popen(
        holder_command(systemd_run, unit),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # a Ctrl-C for the run is not for the scope's holder
    )
    try:
        path = root / _placement(holder, timeout).lstrip("/")
        leaf = path / HOLDER_LEAF
        try:
            leaf.mkdir(exist_ok=True)
        except OSError as exc:
            raise BackendError(f"cannot create {leaf}: {exc.strerror}") from exc
        fs.write(leaf / "cgroup.procs", str(holder.pid))
    except BaseException:
        _end(holder)
        raise
    finally:
        for pipe in (holder.stdout, holder.stderr):
            if pipe is not None:
                pipe.close()
    return Scope(unit, path, holder)


def _placement(holder: subprocess.Popen[bytes], timeout: float) -> str:
    """The holder's group once systemd placed it (its first line), or why there is none."""
    assert holder.stdout is not None and holder.stderr is not None
    deadline = time.monotonic() + timeout
    buf = b""
    while b"\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([holder.stdout], [], [], left)[0]:
            raise BackendError(f"systemd-run did not start a scope within {timeout:g} s")
        chunk = os.read(holder.stdout.fileno(), 4096)
        if not chunk:  # it closed its output: it failed, or will say nothing more
            _end(holder)
            said = holder.stderr.read().decode(errors="replace").strip().splitlines()
            raise BackendError(
                f"systemd-run --scope failed (exit {holder.returncode})"
                + (f": {said[-1]}" if said else "")
            )
        buf += chunk
    for line in buf.decode(errors="replace").splitlines():
        path = parse_placement(line)
        if path is not None:
            return path
    raise BackendError(f"the scope's holder is in no cgroup v2 group: {buf[:200]!r}")


def stop_unit(unit: str, timeout: float = 60.0) -> list[str]:
    """``systemctl stop unit``: systemd then removes the unit's group (it owns it; a rmdir
    would leave the unit behind).  Warnings, if it could not."""
    try:
        done = subprocess.run(
            ["systemctl", "stop", unit], capture_output=True, text=True, timeout=timeout
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [f"cannot stop {unit}: {exc}"]
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()
        return [f"cannot stop {unit}: {said[-1] if said else f'exit {done.returncode}'}"]
    return []


_lock = threading.Lock()
_scopes: dict[Path, Scope] = {}


def process_scope(root: Path) -> Scope:
    """This process's delegated scope in the hierarchy at ``root``, started on first use.

    One per process: a backend is made per run, and a scope per backend would keep a holder
    per run until the process ends.
    """
    with _lock:
        scope = _scopes.get(root)
        if scope is None or scope.holder.poll() is not None:
            scope = _scopes[root] = start_scope(root)
        return scope
