"""backends/_tmpfs_use.py: /dev/shm's growth over a process-backend run, which no resident
set holds (a user's 100 MiB there had read "shmem 0", peak 11.6 MiB, and no word)."""

from __future__ import annotations

import pytest

from edgeprof.backends import _tmpfs_use
from edgeprof.backends._tmpfs_use import SAID_FROM, TmpfsGrowth

MIB = 1 << 20


def _readings(monkeypatch: pytest.MonkeyPatch, values: list[int | None]) -> None:
    it = iter(values)
    monkeypatch.setattr(_tmpfs_use, "tmpfs_used", lambda path="": next(it))


def test_growth_of_the_tmpfs_during_the_run_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    _readings(monkeypatch, [4 * MIB, 54 * MIB, 104 * MIB, 4 * MIB])  # written, then removed
    g = TmpfsGrowth("/dev/shm")
    for _ in range(3):
        g.read()
    assert (g.warning() or "").startswith("/dev/shm grew by up to 100.0MiB during the run")


@pytest.mark.parametrize("values", [[4 * MIB, 4 * MIB + SAID_FROM - 1], [None, 90 * MIB]])
def test_little_growth_or_an_unreadable_tmpfs_says_nothing(
    monkeypatch: pytest.MonkeyPatch, values: list[int | None]
) -> None:
    _readings(monkeypatch, values)
    g = TmpfsGrowth()
    g.read()
    assert g.warning() is None

