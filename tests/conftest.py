"""Shared test policy: tiers that cannot set themselves up skip on a laptop, fail in CI."""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"

# The suite runs its workloads as root and has them write into root's temporary directories.
# Under `sudo make test`, edgeprof would drop them to the sudo user (edgeprof.measure.privilege):
# the tests that check that drop set SUDO_UID themselves.
for _var in ("SUDO_UID", "SUDO_GID", "SUDO_USER", "SUDO_COMMAND"):
    os.environ.pop(_var, None)


@pytest.fixture(autouse=True)
def isolated_core_leases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Each test leases cores in a directory of its own (edgeprof.measure.leases), inherited
    by the edgeprof processes it starts: the suite neither waits for the host's other
    edgeprof runs nor holds their cores, and no test's lease outlives it."""
    directory = tmp_path_factory.mktemp("leases")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("EDGEPROF_LEASE_DIR", str(directory))
        yield directory


def require(ok: bool, reason: str) -> None:
    """Skip with ``reason`` when ``ok`` is false — except in CI, where no tier may skip."""
    if ok:
        return
    if IN_CI:
        pytest.fail(f"tier cannot run in CI: {reason}", pytrace=False)
    pytest.skip(reason)


def require_module(name: str, extra: str) -> ModuleType:
    """``import name``, or :func:`require` fails (CI) / skips (a laptop) naming the extra."""
    try:
        return importlib.import_module(name)
    except ImportError:
        require(False, f"needs {name}: pip install '.[{extra}]'")
        raise


def ranking_order(text: str, metric: str) -> list[str]:
    """The models of the first ``Ranking by <metric> under …`` table in ``text``, in order."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"Ranking by {metric} under "))
    order = []
    for ln in lines[start + 3 :]:
        parts = ln.split()
        if not parts or not parts[0].isdigit():
            break
        order.append(parts[1])
    return order
