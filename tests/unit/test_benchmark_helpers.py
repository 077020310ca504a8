"""The benchmark scripts' own logic: where a scratch file goes, and when a contended base
is said to be one (the scripts' figures are measured, never asserted)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from benchmarks import cpu_period
from benchmarks.scratch import disk_dir, filesystem_of
from edgeprof.model import RunResult
from tests.unit.conftest import make_result

MOUNTS = """\
/dev/vda / ext4 rw,relatime 0 0
tmpfs /tmp tmpfs rw,nosuid 0 0
/dev/vdb /tmp/disk ext4 rw 0 0
"""


def test_filesystem_of_is_the_longest_mount_point_that_holds_the_path() -> None:
    assert filesystem_of(Path("/tmp/x"), MOUNTS) == "tmpfs"
    assert filesystem_of(Path("/tmp/disk/x"), MOUNTS) == "ext4"
    assert filesystem_of(Path("/tmpfoo"), MOUNTS) == "ext4"  # a prefix of the text only


def test_disk_dir_leaves_a_temporary_directory_in_memory_for_var_tmp(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("tempfile.tempdir", "/tmp")
    assert disk_dir(MOUNTS) == Path("/var/tmp")
    monkeypatch.setattr("tempfile.tempdir", "/tmp/disk")
    assert disk_dir(MOUNTS) == Path("/tmp/disk")


def _run(wall_s: float, held_s: float | None, throttled_s: float) -> RunResult:
    r = make_result(wall_s=wall_s)
    cpu = dataclasses.replace(r.cpu, held_s=held_s, throttled_s=throttled_s)
    return dataclasses.replace(r, cpu=cpu)


def test_held_share_is_the_held_time_less_the_quotas_own_stalls() -> None:
    assert cpu_period.held_share(_run(2.0, 0.5, 0.1)) == pytest.approx(0.2)
    assert cpu_period.held_share(_run(2.0, 0.1, 0.3)) == 0.0
    assert cpu_period.held_share(_run(2.0, None, 0.0)) is None


def test_a_contended_base_is_said_under_the_table_from_a_tenth_of_its_time() -> None:
    assert cpu_period.contention_note({"held": 0.099}) is None
    assert cpu_period.contention_note({"held": None}) is None
    note = cpu_period.contention_note({"held": 0.25})
    assert note is not None and "held off its core by other tasks 25 % of its time" in note
