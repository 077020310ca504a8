"""What the host and a guest of the VM harness agree on, and what a run gives back.

The paths of the two 9p shares inside the guest, the interpreter a guest command should use,
the assets a boot needs (:class:`VmAssets`), the outcome of a run (:class:`GuestResult`) and
the two ways a run fails (:class:`VmUnavailable`: not possible here; :class:`VmError`: the
guest failed).  Only the standard library is used.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

#: Where the writable result share is mounted in the guest (also given to the command as
#: ``$EDGEPROF_VM_OUT``).  Files written there appear in :attr:`GuestResult.out_dir`.
GUEST_OUT_DIR = "/run/edgeprof-vm/out"

#: Where the host's root file system is bound read-only in the guest, for paths that the guest
#: hides (its ``/proc``, ``/sys``, ``/dev``).  Given to the command as ``$EDGEPROF_VM_HOST_ROOT``.
GUEST_HOST_ROOT = "/run/edgeprof-vm/host"

#: The repository that contains this file (the checkout the guest works on).
REPO_ROOT = Path(__file__).resolve().parents[2]

#: The host interpreter, used when the checkout has no ``.venv``.
HOST_PYTHON = Path("/root/.pyenv/versions/3.11.7/bin/python3")


class VmUnavailable(RuntimeError):
    """The VM tier cannot be set up on this machine; ``str(exc)`` says why.

    Raised for missing prerequisites (not Linux x86-64, qemu missing and not root, no apt,
    packages not downloadable, ...).  Test suites skip on it outside CI and fail in CI.
    """


class VmError(RuntimeError):
    """The guest failed: it did not boot, timed out, or did not report an exit code.

    :attr:`boot_log` holds the serial console (and qemu's own messages), :attr:`output` what
    the command had written when it was cut short (if it started).
    """

    def __init__(self, message: str, boot_log: str = "", output: str = "") -> None:
        """Keep ``boot_log`` and ``output`` and append their tails to the message."""
        self.boot_log = boot_log
        self.output = output
        parts = [message]
        if output.strip():
            parts.append(f"--- command output so far (tail) ---\n{_tail(output, 30)}")
        if boot_log.strip():
            parts.append(f"--- serial console (tail) ---\n{_tail(boot_log)}")
        super().__init__("\n".join(parts))


@dataclasses.dataclass(frozen=True)
class VmAssets:
    """Everything needed to boot a guest (all files live in the cache directory)."""

    qemu: Path
    kernel: Path
    initrd: Path
    #: ``uname -r`` of the guest kernel, e.g. ``6.12.95+deb12-amd64`` or ``6.1.0-50-amd64``.
    kernel_release: str
    #: The series it was chosen from (``6.12`` or ``6.1``, :mod:`tests.vm.series`).
    kernel_series: str
    #: Modules packed into the initramfs, in load order.
    loaded_modules: tuple[str, ...]
    #: Modules of :data:`MODULES` that this kernel has built in (nothing to load).
    builtin_modules: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class GuestResult:
    """The outcome of :func:`run_in_guest`."""

    #: Exit status of the command in the guest (126/127 if it could not be started).
    exit_code: int
    #: Combined stdout and stderr of the command.
    output: str
    #: Host directory shared with the guest as :data:`GUEST_OUT_DIR`.  Holds ``output.txt``,
    #: ``exit_code``, ``command.sh``, ``console.log`` and whatever the command wrote there.
    out_dir: Path
    #: Serial console of the guest plus qemu's own messages.
    boot_log: str
    #: Guest uptime (seconds) when the command started, if reported.
    boot_seconds: float | None = None
    #: Host wall-clock seconds from starting qemu to its exit.
    wall_seconds: float = 0.0


def in_ci() -> bool:
    """Return whether we run in CI (``CI=true``), where no test tier may skip."""
    return os.environ.get("CI", "").lower() == "true"


def inside_guest() -> bool:
    """Return whether this process runs inside a guest booted by this harness."""
    return os.path.ismount(GUEST_OUT_DIR)


def project_python() -> Path:
    """Return the interpreter the guest should use: the checkout's venv, else the host's."""
    venv = REPO_ROOT / ".venv" / "bin" / "python"
    return venv if venv.exists() else HOST_PYTHON


#: vCPUs a guest gets unless ``$EDGEPROF_VM_CPUS`` says otherwise: more than our 2-core
#: machines have, so tests meet a machine of a size they were not written on.
DEFAULT_CPUS = 8


def default_cpus() -> int:
    """Return ``$EDGEPROF_VM_CPUS`` (a positive integer), else :data:`DEFAULT_CPUS`."""
    env = os.environ.get("EDGEPROF_VM_CPUS", "").strip()
    if not env:
        return DEFAULT_CPUS
    if not env.isdigit() or int(env) < 1:
        raise ValueError(f"EDGEPROF_VM_CPUS must be a positive integer, not {env!r}")
    return int(env)


def default_cache_dir() -> Path:
    """Return ``$EDGEPROF_VM_CACHE``, else ``~/.cache/edgeprof/vm``."""
    env = os.environ.get("EDGEPROF_VM_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "edgeprof" / "vm"


def _tail(text: str, lines: int = 60) -> str:
    """Return the last ``lines`` lines of ``text``."""
    return "\n".join(text.rstrip().splitlines()[-lines:])
