"""Input checks that need no process: where the mode bits say the user a workload runs as
(sudo's) is barred from ``--cwd`` (the error names it; whether it may enter is the kernel's
answer, ``tests/host/test_privilege.py``); input files of no end refused at a bound
(:func:`edgeprof.storage.read_capped`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from edgeprof import storage
from edgeprof.cli import main
from edgeprof.measure.inputs import first_barred
from edgeprof.model import UserIds

NOBODY = UserIds(65534, 65534, (100,))


def _stat(modes: dict[str, tuple[int, int, int]]) -> Callable[[Path], os.stat_result]:
    def stat(p: Path) -> os.stat_result:
        mode, uid, gid = modes.get(str(p), (0o755, 0, 0))
        return os.stat_result((0o040000 | mode, 0, 0, 2, uid, gid, 0, 0, 0, 0))

    return stat


def test_the_first_directory_the_user_cannot_search_is_named() -> None:
    path = Path("/srv/priv/inner")
    assert first_barred(path, NOBODY, _stat({})) is None  # 0755 all the way
    barred = _stat({"/srv/priv": (0o700, 0, 0)})
    assert first_barred(path, NOBODY, barred) == Path("/srv/priv")
    assert first_barred(path, UserIds(0, 0, ()), barred) is None  # root passes every one


def test_owner_then_group_then_others_as_the_kernel_reads_them() -> None:
    path = Path("/d")
    mine = _stat({"/d": (0o070, 65534, 0)})  # the owner's bits count, though the group's allow
    assert first_barred(path, NOBODY, mine) == path
    group = _stat({"/d": (0o710, 0, 100)})  # a supplementary group
    assert first_barred(path, NOBODY, group) is None
    others = _stat({"/d": (0o701, 0, 0)})
    assert first_barred(path, NOBODY, others) is None


@pytest.mark.parametrize(
    "argv",
    [
        ["devices", "--devices", "/dev/zero"],
        ["run", "--backend", "fake", "-f", "/dev/zero", "--", "true"],
        ["run", "--backend", "fake", "-e", "/dev/zero"],
        ["run", "--backend", "fake", "--budgets", "/dev/zero", "--", "true"],
        ["report", "/dev/zero"],
        ["compare", "/dev/zero", "/dev/zero"],
    ],
    ids=["catalog", "models", "env.template", "budgets", "report", "compare"],
)
def test_an_endless_input_file_is_one_line_not_all_the_memory(
    argv: list[str], capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``/dev/zero`` (or a 3 GB sparse file) had been read whole: memory grew until a
    MemoryError traceback.  Results files are held to a larger bound than configuration."""
    monkeypatch.setattr(storage, "MAX_JSON_BYTES", 1 << 20)  # the test's, not 512 MiB
    assert main(argv) == 2
    err = capfd.readouterr().err
    assert err.startswith("edgeprof: error: /dev/zero: more than ") and err.count("\n") == 1, err
    assert "MiB, not a file edgeprof reads" in err
