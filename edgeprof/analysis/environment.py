"""``edgeprof doctor``'s check of the environment variables edgeprof reads (docs/usage.md,
"Environment variables", lists them).  ``EDGEPROF_DEVICES=/nonexistent.yml`` had passed
``doctor`` with no line, though every ``--device`` command then failed (a tester's).

In ``analysis``: it parses the device catalog (:mod:`edgeprof.analysis.devices`), above the
doctor's host checks in ``measure``.  A variable that is not set says nothing, except the
catalog, whose line says which catalogs a ``--device`` reads."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..errors import ConfigError
from ..measure.doctor import Finding
from ..measure.leases import LEASE_DIR_ENV, absolute_lease_dir
from ..measure.limits import THREAD_VARS
from ..storage import check_appendable
from .devices import DEVICES_ENV, builtin_catalog, parse_catalog

_SHOWN = (*THREAD_VARS, "NO_COLOR", "COLUMNS", "RAY_ADDRESS", "CUDA_VISIBLE_DEVICES")
"""Read as they are, nothing to check: said so that a value nobody remembers setting shows."""


def environment_findings(
    env: Mapping[str, str] | None = None, euid: int | None = None
) -> list[Finding]:
    """One finding per variable edgeprof reads that is set, and the device catalogs.
    ``$XDG_RUNTIME_DIR`` is checked only where it holds the leases (a user's run without
    ``$EDGEPROF_LEASE_DIR``): root's leases are in ``/run/edgeprof``, and a bad one had been
    ``[MISS]`` for root (a verifier's)."""
    env = os.environ if env is None else env
    euid = os.geteuid() if euid is None else euid
    found = [catalog_finding(env.get(DEVICES_ENV))]
    if given := env.get(LEASE_DIR_ENV):
        found.append(_lease_dir(given))
    xdg = env.get("XDG_RUNTIME_DIR")
    if xdg and euid != 0 and not env.get(LEASE_DIR_ENV):
        found.append(_directory("XDG_RUNTIME_DIR", Path(xdg)))
    elif xdg:
        found.append(Finding("$XDG_RUNTIME_DIR", None, f"{xdg!r} (not where the leases are)"))
    if env.get("GITHUB_STEP_SUMMARY"):
        found.append(_step_summary(Path(env["GITHUB_STEP_SUMMARY"])))
    found += [Finding(f"${k}", None, repr(env[k])) for k in _SHOWN if k in env]
    return found


def catalog_finding(path: str | None) -> Finding:
    """The catalogs a ``--device`` reads; ``path``: ``$EDGEPROF_DEVICES``, parsed here as a
    ``--device`` would parse it, with the shipped entries it replaces named."""
    if not path:
        return Finding("device catalog", None, f"shipped only (${DEVICES_ENV} is not set)")
    try:
        shipped, own = parse_catalog(builtin_catalog()), parse_catalog(Path(path))
    except ConfigError as exc:
        return Finding("device catalog", False, str(exc), f"fix or unset ${DEVICES_ENV}")
    replaced = sorted(set(own) & set(shipped))
    also = f"; replaces the shipped {', '.join(replaced)}" if replaced else ""
    return Finding("device catalog", True, f"${DEVICES_ENV}: {path}, {len(own)} device(s){also}")


def _directory(var: str, path: Path) -> Finding:
    """A directory edgeprof makes files under: there (or makeable) and writable."""
    probe = path
    while not probe.exists() and probe != probe.parent:  # made at the first run
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        why = "not a directory" if not probe.is_dir() else "not writable by this user"
        return Finding(f"${var}", False, f"{path}: {probe} is {why}", f"point ${var} elsewhere")
    return Finding(f"${var}", True, str(path))


def _lease_dir(given: str) -> Finding:
    """``$EDGEPROF_LEASE_DIR`` as a run takes it: a relative one, which every run refuses,
    had been ``[ok]`` here (a user's)."""
    try:
        path = absolute_lease_dir(given)
    except ConfigError as exc:
        fix = f"set ${LEASE_DIR_ENV} to an absolute directory, or unset it"
        return Finding(f"${LEASE_DIR_ENV}", False, str(exc), fix)
    return _directory(LEASE_DIR_ENV, path)


def _step_summary(path: Path) -> Finding:
    try:
        check_appendable(path)
    except ConfigError as exc:
        return Finding("$GITHUB_STEP_SUMMARY", False, str(exc), "unset it or fix the file")
    return Finding("$GITHUB_STEP_SUMMARY", True, str(path))
