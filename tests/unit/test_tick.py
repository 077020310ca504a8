"""The scheduler tick: parsed from a kernel configuration, else counted from jiffies."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from edgeprof.measure import tick


def test_config_hz_and_jiffies_parse_the_kernels_text() -> None:
    assert tick.config_hz("# CONFIG_HZ_100 is not set\nCONFIG_HZ_250=y\nCONFIG_HZ=250\n") == 250
    assert tick.config_hz("CONFIG_HZ_250=y\n") is None
    assert tick.jiffies("Timer List Version: v0.10\nnow at 1 nsecs\njiffies: 4297578936\n") == (
        4297578936
    )
    assert tick.jiffies("now at 1 nsecs\n") is None


def test_the_first_readable_config_wins(tmp_path: Path) -> None:
    gz = tmp_path / "config.gz"
    with gzip.open(gz, "wt") as f:
        f.write("CONFIG_HZ=1000\n")
    plain = tmp_path / "config-6.1"
    plain.write_text("CONFIG_HZ=300\n")
    assert tick.scheduler_hz([tmp_path / "absent", gz, plain]) == 1000
    assert tick.scheduler_hz([tmp_path / "absent", plain]) == 300
    bad = tmp_path / "bad.gz"
    bad.write_bytes(b"not gzip")
    assert tick.scheduler_hz([bad, plain]) == 300


@pytest.mark.parametrize(("counted", "hz"), [(24, 250), (101, 1000), (10, 100), (31, 300)])
def test_without_a_config_the_jiffies_are_counted(tmp_path: Path, counted: int, hz: int) -> None:
    timer_list = tmp_path / "timer_list"
    timer_list.write_text("jiffies: 1000\n")
    now = [50.0]

    def sleep(s: float) -> None:
        now[0] += s
        timer_list.write_text(f"jiffies: {1000 + counted}\n")

    assert tick.scheduler_hz([], timer_list, 0.1, sleep, lambda: now[0]) == hz


def test_unreadable_or_stopped_jiffies_are_unknown(tmp_path: Path) -> None:
    absent = tmp_path / "timer_list"
    assert tick.scheduler_hz([], absent, 0.0, lambda s: None) is None
    absent.write_text("jiffies: 7\n")
    assert tick.scheduler_hz([], absent, 0.0, lambda s: None) is None


def test_the_steady_iteration_is_five_ticks_and_says_so() -> None:
    assert tick.steady_iteration_s(250) == pytest.approx(0.02)
    assert tick.steady_iteration_s(None) == pytest.approx(0.05)
    assert tick.describe(250) == (
        "scheduler tick 4 ms (250 Hz): a fractional --cpus is enforced once per tick, "
        "so iterations under 20 ms carry up to a tick of stall jitter each"
    )
    assert "iterations of 50 ms or more" in tick.describe(None)
