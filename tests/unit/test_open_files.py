"""edgeprof's own open-file limit raised, the workload's left as the user gave it (a tester's
``ulimit -n 8`` had been a traceback, 32 "cannot open None")."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from edgeprof import openfiles
from edgeprof.errors import ConfigError

_SETRLIMIT = resource.setrlimit  # the real one, for the end-to-end test's child


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    monkeypatch.setattr(openfiles, "_user_soft", None)
    calls: list[tuple[int, int]] = []
    monkeypatch.setattr(resource, "setrlimit", lambda _r, lim: calls.append(lim))
    return calls


def _limits(monkeypatch: pytest.MonkeyPatch, soft: int, hard: int) -> None:
    monkeypatch.setattr(resource, "getrlimit", lambda _r: (soft, hard))


@pytest.mark.parametrize(
    ("soft", "hard", "raised"),
    [(20, 4096, 1024), (20, 100, 100), (64, 64, None), (1024, 4096, None), (2048, 4096, None)],
)
def test_the_soft_limit_is_raised_toward_1024_within_the_hard(
    monkeypatch: pytest.MonkeyPatch,
    _fresh: list[tuple[int, int]],
    soft: int,
    hard: int,
    raised: int | None,
) -> None:
    _limits(monkeypatch, soft, hard)
    openfiles.open_enough()
    assert _fresh == ([] if raised is None else [(raised, hard)])
    assert openfiles.workload_soft_limit() == (None if raised is None else soft)


def test_an_unlimited_hard_limit_gives_1024(
    monkeypatch: pytest.MonkeyPatch, _fresh: list[tuple[int, int]]
) -> None:
    _limits(monkeypatch, 256, resource.RLIM_INFINITY)
    openfiles.open_enough()
    assert _fresh == [(1024, resource.RLIM_INFINITY)]


def test_a_hard_limit_under_the_need_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    _limits(monkeypatch, 20, 36)
    with pytest.raises(ConfigError) as err:
        openfiles.open_enough()
    assert str(err.value) == (
        "edgeprof needs 64 open files at once, and the hard limit here is 36: raise it "
        "(ulimit -Hn 64, as root, or in limits.conf)"
    )


_EDGEPROF = [sys.executable, "-m", "edgeprof"]


def test_the_workload_keeps_the_users_soft_limit(tmp_path: Path) -> None:
    """End to end: edgeprof under a soft limit of 20 runs, and its workload sees 20."""

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]

    def low() -> None:
        _SETRLIMIT(resource.RLIMIT_NOFILE, (20, hard))

    done = subprocess.run(
        [*_EDGEPROF, "run", "--backend", "process", "--", "sh", "-c", "echo soft=$(ulimit -Sn)"],
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=low,
        cwd=str(tmp_path),
        env={**os.environ},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "soft=20"
