"""Host-side commands the VM asset build runs: apt-get, dpkg, a lock, qemu's install.

Every failure is a :class:`~tests.vm.guest.VmUnavailable` with the command and the end of its
output.  ``apt-get update`` runs at most once per process (``_apt_updated``).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shlex
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

from . import series
from .guest import VmUnavailable, _tail


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` for the duration of the block."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(argv: Sequence[str], *, cwd: Path | None = None, timeout: float = 1800) -> str:
    """Run a host command and return its stdout; raise :class:`VmUnavailable` on failure."""
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive", LC_ALL="C")
    try:
        proc = subprocess.run(
            list(argv),
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise VmUnavailable(f"`{shlex.join(argv)}` failed: {exc}") from exc
    if proc.returncode != 0:
        raise VmUnavailable(
            f"`{shlex.join(argv)}` exited with {proc.returncode}:\n"
            f"{_tail(proc.stdout + proc.stderr, 20)}"
        )
    return proc.stdout


def _require_apt(what: str) -> None:
    """Raise :class:`VmUnavailable` unless apt tooling is present."""
    for tool in ("apt-get", "apt-cache", "dpkg"):
        if shutil.which(tool) is None:
            raise VmUnavailable(f"{what} needs `{tool}` (a Debian-like host), which is missing")


_apt_updated = False

#: Private apt directories already updated by this process.
_private_updated: set[Path] = set()


def _apt_update() -> None:
    """Run ``apt-get update`` once per process (root only; otherwise do nothing)."""
    global _apt_updated
    if _apt_updated or os.geteuid() != 0:
        return
    _run(["apt-get", "-o", "DPkg::Lock::Timeout=300", "update"])
    _apt_updated = True


def _ensure_qemu() -> Path:
    """Return the qemu binary, installing ``qemu-system-x86`` when missing and root."""
    found = shutil.which("qemu-system-x86_64")
    if found:
        return Path(found)
    _require_apt("installing qemu")
    if os.geteuid() != 0:
        raise VmUnavailable(
            "qemu-system-x86_64 is missing and we are not root to install it "
            "(apt-get install qemu-system-x86)"
        )
    install = [
        "apt-get",
        "-o",
        "DPkg::Lock::Timeout=300",
        "install",
        "-y",
        "--no-install-recommends",
        "qemu-system-x86",
    ]
    try:
        _run(install)
    except VmUnavailable:
        _apt_update()  # the package index may be missing or stale
        _run(install)
    found = shutil.which("qemu-system-x86_64")
    if not found:
        raise VmUnavailable("qemu-system-x86 installed but qemu-system-x86_64 is not on PATH")
    return Path(found)


def _download_deb(package: str, dest: Path, apt_options: Sequence[str] = ()) -> Path:
    """``apt-get download`` one package into ``dest`` and return the .deb."""
    _run(["apt-get", *apt_options, "download", package], cwd=dest, timeout=1800)
    debs = sorted(dest.glob(f"{package}_*.deb"))
    if not debs:
        raise VmUnavailable(f"apt-get download {package} produced no .deb in {dest}")
    return debs[-1]


def _private_apt(cache: Path, suite: str, *, refresh: bool = False) -> list[str]:
    """Return apt options for a private configuration fetching ``suite`` of the host's mirror.

    The configuration lives in ``cache/apt`` (sources, package lists, download cache);
    :func:`~tests.vm.series.private_apt_options` keeps apt off the host's own.  Its
    ``apt-get update`` runs when the lists are empty, or once per process on ``refresh``.
    """
    apt_dir = cache / "apt"
    for sub in ("sources", "lists/partial", "cache/archives/partial"):
        (apt_dir / sub).mkdir(parents=True, exist_ok=True)
    mirror = series.host_mirror(series.read_host_sources())
    sources = apt_dir / "sources" / "edgeprof-vm.sources"
    text = series.private_sources(mirror, suite)
    stale = not sources.exists() or sources.read_text() != text
    if stale:
        sources.write_text(text)
    options = series.private_apt_options(apt_dir)
    has_lists = any((apt_dir / "lists").glob("*_Packages*"))
    if stale or not has_lists or (refresh and apt_dir not in _private_updated):
        _run(["apt-get", *options, "update"], timeout=600)
        _private_updated.add(apt_dir)
    return options
