"""Other tasks holding the run's CPUs (edgeprof.measure.contention): when the run is warned
of them, from its group's ``cpu.pressure`` ``full`` less its throttled time."""

from __future__ import annotations

import pytest

from edgeprof.measure.contention import contention_warning, held_by_others


@pytest.mark.parametrize(
    ("wall", "held", "throttled", "warned"),
    [
        (3.0, 2.0, 0.0, True),  # a tester's --cpus 1 on a busy core
        (3.0, 2.0, None, True),  # no quota: no throttled time
        (3.0, 0.2, 0.0, False),  # under a tenth of its time
        (3.0, 2.2, 2.0, False),  # the quota's stalls, not others
        (3.0, 1.0, 2.5, False),  # a multi-threaded run's throttled time adds up its CPUs'
        (0.1, 0.015, 0.0, False),  # a few milliseconds: one late wake-up
        (0.1, 0.05, 0.0, True),  # half of a short run
        (3.0, None, 0.0, False),  # no pressure file
    ],
)
def test_a_run_is_warned_when_others_held_it_off_its_cpus(
    wall: float, held: float | None, throttled: float | None, warned: bool
) -> None:
    w = contention_warning(wall, held, throttled, [0])
    assert (w is not None) == warned, w


def test_the_held_time_is_never_below_zero_nor_a_guess() -> None:
    assert held_by_others(1.0, 2.5) == 0.0
    assert held_by_others(1.0, None) == 1.0
    assert held_by_others(None, 0.0) is None


def test_the_warning_says_how_long_and_where() -> None:
    w = contention_warning(3.28, 2.05, 0.0, [3])
    assert w == (
        "other tasks on this host held the run off its CPU 3 for 2.05s (62% of its wall "
        "time) beyond the quota's stalls: its times are slower than its limits alone make "
        "them (run it on an idle host, or on --cpuset CPUs nothing else uses)"
    )
    assert "held the run off its CPUs 0-1 for 1.50s" in (
        contention_warning(3.0, 2.0, 0.5, [0, 1]) or ""
    )
    assert "held the run off its CPUs for" in (contention_warning(3.0, 2.0, 0.0, None) or "")


def test_the_warning_says_what_the_run_had() -> None:
    """``edgeprof run -- python x.py`` on a busy host: no quota and no device, and it was told
    of "the quota's stalls" and of "the device's" times."""
    plain = contention_warning(3.0, 2.0, None, None, quota=False, limited=False)
    assert plain is not None and "quota" not in plain and "device" not in plain
    assert "for 2.00s (67% of its wall time): its times are slower than on an idle host" in plain
    pinned = contention_warning(3.0, 2.0, None, [0, 1], quota=False, limited=True)
    assert pinned is not None and "quota" not in pinned
    assert "its times are slower than its limits alone make them" in pinned
    board = contention_warning(3.0, 2.0, 0.5, None, device="rpi4")
    assert board is not None
    assert "beyond the quota's stalls: its times are slower than device rpi4's" in board


def test_a_repeats_warning_names_the_runs_it_is_about() -> None:
    import dataclasses

    from edgeprof.report.results import render_plain

    from .conftest import make_result

    runs = [make_result(warnings=("a warning",)) for _ in range(3)]
    runs[1] = dataclasses.replace(runs[1], warnings=("a warning", "held off, run 2's"))
    runs[2] = dataclasses.replace(runs[2], warnings=("a warning", "held off, 2 and 3"))
    runs[1] = dataclasses.replace(runs[1], warnings=(*runs[1].warnings, "held off, 2 and 3"))
    text = render_plain(runs)
    assert "  warning: a warning\n" in text  # every run's: no number
    assert "  warning (run 2): held off, run 2's\n" in text
    assert "  warning (runs 2, 3): held off, 2 and 3\n" in text
