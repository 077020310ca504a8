"""Where the running edgeprof's code came from: recorded in each result beside its version.

``edgeprof_version`` stays 0.1.0 while the code under it changes for weeks: a tester's runs
of 00:03 and 00:04 wrote identical provenance across 10 changed files.  The git commit of
edgeprof's own checkout (or what the installed distribution says of its origin) tells such
codes apart.  Read once per process, from files only: no ``git`` subprocess per run.
"""

from __future__ import annotations

import functools
import json
import platform
import re
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from ..model.origin import EdgeprofOrigin

PACKAGE = Path(__file__).resolve().parents[1]
"""The ``edgeprof`` package directory this code runs from."""

_SHA = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")  # SHA-1, or a SHA-256 repository's


@functools.cache
def edgeprof_origin() -> EdgeprofOrigin:
    """This process's edgeprof's :class:`EdgeprofOrigin`, read once (a checkout's commit in
    0.3 ms here; an installed distribution's metadata in ~60 ms)."""
    python = f"{platform.python_implementation()} {platform.python_version()}"
    return EdgeprofOrigin(source=source_of(PACKAGE), python=python)


X86 = frozenset({"x86_64", "i386", "i486", "i586", "i686", "amd64"})


class CpuIdentity(NamedTuple):
    family: int | None
    model: int | None
    stepping: int | None
    virtual: bool | None


def cpu_identity(cpuinfo: Mapping[str, str], machine: str) -> CpuIdentity:
    """The x86 CPU's family, model number and stepping, and whether it is virtual (its
    ``hypervisor`` flag), from the first CPU's ``/proc/cpuinfo`` keys; all ``None`` off
    x86 (``machine``, ``uname -m``), where another architecture's ``model`` means another
    thing, and each where its key is missing or not a number."""
    if machine not in X86:
        return CpuIdentity(None, None, None, None)
    flags = cpuinfo.get("flags")
    return CpuIdentity(
        family=_number(cpuinfo.get("cpu family")),
        model=_number(cpuinfo.get("model")),
        stepping=_number(cpuinfo.get("stepping")),
        virtual=None if flags is None else "hypervisor" in flags.split(),
    )


def cpuinfo_keys(text: str) -> dict[str, str]:
    """Each key of ``/proc/cpuinfo``'s ``text`` with its first value (the first CPU's)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        if colon:
            out.setdefault(key.strip(), value.strip())
    return out


def _number(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None


def source_of(package: Path) -> str | None:
    """Where the code of ``package`` came from: ``git <commit>`` where it runs from a git
    checkout (the commit its ``HEAD`` names), else the installed distribution's origin
    (:func:`installed_source`); ``None`` where neither is known.

    A checkout's commit does not say whether its files were edited since: telling that
    truly takes ``git status`` (the index against the files and ``HEAD``'s tree), and a
    stat comparison alone can claim clean files that differ, so nothing is claimed."""
    commit = checkout_commit(package.parent / ".git")
    if commit is not None:
        return f"git {commit}"
    return installed_source()


def checkout_commit(dot_git: Path) -> str | None:
    """The commit ``HEAD`` names in the repository of ``dot_git`` (a directory, or a
    worktree's or submodule's ``gitdir:`` file), through its loose ref or ``packed-refs``;
    ``None`` where it cannot be read (no repository, an unborn branch)."""
    gitdir = _gitdir(dot_git)
    if gitdir is None:
        return None
    head = _read(gitdir / "HEAD")
    if head is None:
        return None
    if not head.startswith("ref:"):
        return _sha(head)  # a detached HEAD holds the commit itself
    ref = head.removeprefix("ref:").strip()
    # A worktree keeps its own HEAD; its branches are the main repository's (commondir).
    common = _read(gitdir / "commondir")
    refs_dir = gitdir if common is None else (gitdir / common).resolve()
    loose = _read(refs_dir / ref)
    if loose is not None:
        return _sha(loose)
    for line in (_read(refs_dir / "packed-refs") or "").splitlines():
        sha, _, name = line.partition(" ")
        if name == ref:
            return _sha(sha)
    return None


def installed_source() -> str | None:
    """The installed ``edgeprof`` distribution's origin (PEP 610's ``direct_url.json``): a
    VCS install's ``git <commit> (<url>)``, an archive's or a directory's URL (with the
    archive's hash where recorded); from a package index (no ``direct_url.json``):
    ``edgeprof <version> from a package index``.  ``None``: not installed."""
    import importlib.metadata  # ~60 ms to import and search: only where no checkout answered

    try:
        dist = importlib.metadata.distribution("edgeprof")
    except importlib.metadata.PackageNotFoundError:
        return None
    text = dist.read_text("direct_url.json")
    if text is None:
        return f"edgeprof {dist.version} from a package index"
    return direct_url_source(text, dist.version)


def direct_url_source(text: str, version: str) -> str | None:
    """What a ``direct_url.json`` (PEP 610) says of where a distribution came from."""
    try:
        d = json.loads(text)
    except ValueError:
        return None
    url = d.get("url") if isinstance(d, dict) else None
    if not isinstance(url, str):
        return None
    vcs = d.get("vcs_info")
    if isinstance(vcs, dict) and isinstance(vcs.get("commit_id"), str):
        return f"{vcs.get('vcs', 'vcs')} {vcs['commit_id']} ({url})"
    archive = d.get("archive_info")
    if isinstance(archive, dict):
        hashes = archive.get("hashes")
        if isinstance(hashes, dict) and isinstance(hashes.get("sha256"), str):
            return f"{url} (sha256 {hashes['sha256']})"
        return url
    editable = isinstance(d.get("dir_info"), dict) and d["dir_info"].get("editable") is True
    # A directory's files may have changed since: its version names what it was then.
    return f"{url} ({'editable, ' if editable else ''}edgeprof {version})"


def _gitdir(dot_git: Path) -> Path | None:
    if dot_git.is_dir():
        return dot_git
    text = _read(dot_git)
    if text is None or not text.startswith("gitdir:"):
        return None
    return (dot_git.parent / text.removeprefix("gitdir:").strip()).resolve()


def _sha(text: str) -> str | None:
    text = text.strip()
    return text if _SHA.fullmatch(text) else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None
