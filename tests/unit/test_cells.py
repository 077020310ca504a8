"""edgeprof.analysis.cells: the one grouping of runs into (model, limit setting) cells."""

from __future__ import annotations

import dataclasses

from edgeprof.analysis.cells import (
    cell_key,
    cell_name,
    cells,
    cells_by_setting,
    described,
    group_by,
    leased_cores,
    ran_under,
    setting,
    successful,
    without_chosen_cores,
)
from edgeprof.analysis.compare import summarize_cells
from edgeprof.model import CoreLease, Limits, RunResult, Termination

from .conftest import make_result

S1, S2 = Limits(cpus=1), Limits(cpus=2)


def _runs() -> list[RunResult]:
    # Interleaved as a sweep makes them: a model first seen under the second setting.
    return [
        make_result(name="a", limits=S1),
        make_result(name="a", limits=S2),
        make_result(name="b", limits=S2),
        make_result(name="b", limits=S1, termination=Termination.OOM),
        make_result(name="a", limits=S1, wall_s=2.0),
    ]


def test_cells_in_first_seen_order() -> None:
    runs = _runs()
    by_cell = cells(runs)
    assert list(by_cell) == [
        ("a", "cpus=1"),
        ("a", "cpus=2"),
        ("b", "cpus=2"),
        ("b", "cpus=1"),
    ]
    assert by_cell[("a", "cpus=1")] == [runs[0], runs[4]]
    assert cell_key(runs[2]) == ("b", "cpus=2")


def test_cells_by_setting_is_setting_major() -> None:
    grouped = cells_by_setting(_runs())
    assert {s: list(labels) for s, labels in grouped.items()} == {
        "cpus=1": ["a", "b"],
        "cpus=2": ["a", "b"],
    }
    # The comparison tables are laid out the same way.
    summaries = summarize_cells(_runs())
    assert {s: [m.name for m in ms] for s, ms in summaries.items()} == {
        s: list(labels) for s, labels in grouped.items()
    }


def test_group_by_and_successful() -> None:
    runs = _runs()
    assert list(group_by(runs, lambda r: r.label)) == ["a", "b"]
    assert successful(runs) == [runs[0], runs[1], runs[2], runs[4]]


def test_cores_edgeprof_chose_are_not_part_of_the_setting() -> None:
    """Leased cores are whichever were free: rounds of one sweep on cores 0 and 1 are one
    cell; an explicit --cpuset is a setting of its own; old files (no lease) whose cpuset is
    exactly ``cpus`` cores were edgeprof's first-N choice."""

    def run(cpus: float, cpuset: tuple[int, ...], lease: CoreLease | None) -> RunResult:
        return make_result(name="a", limits=Limits(cpus=cpus, cpuset=cpuset), lease=lease)

    on0 = run(1, (0,), CoreLease((0,), 0.0, chosen=True))
    on1 = run(1, (1,), CoreLease((1,), 2.5, chosen=True))
    explicit = run(1, (3,), CoreLease((3,), 0.0, chosen=False))
    old = run(2, (0, 1), None)
    old_wider = run(1, (0, 1), None)  # one CPU of quota over two explicit cores
    assert [setting(r) for r in (on0, on1, explicit, old, old_wider)] == [
        "cpus=1",
        "cpus=1",
        "cpus=1, cpuset=3",
        "cpus=2",
        "cpus=1, cpuset=0-1",
    ]
    assert list(cells([on0, on1, explicit])) == [("a", "cpus=1"), ("a", "cpus=1, cpuset=3")]


def test_a_run_is_of_the_setting_asked_whichever_cores_edgeprof_leased_it() -> None:
    """``run --resume`` holds a finished run to its step's setting by this: compared with the
    leased cores, a ``--cpus 1`` sweep had kept none of its runs."""

    def run(cpus: float, cpuset: tuple[int, ...], lease: CoreLease | None) -> RunResult:
        return make_result(name="a", limits=Limits(cpus=cpus, cpuset=cpuset), lease=lease)

    on1 = run(1, (1,), CoreLease((1,), 0.0, chosen=True))
    assert ran_under(on1, Limits(cpus=1))
    assert not ran_under(on1, Limits(cpus=2))
    assert not ran_under(on1, Limits(cpus=1, memory="1g"))
    assert not ran_under(on1, Limits(cpus=1, cpuset="0"))  # asked for core 0: not this run
    explicit = run(1, (3,), CoreLease((3,), 0.0, chosen=False))
    assert ran_under(explicit, Limits(cpus=1, cpuset="3"))
    assert not ran_under(explicit, Limits(cpus=1))  # asked for core 3: not edgeprof's choice
    remote = run(2, (0, 1), None)  # a remote daemon's run: no lease, the first 2 cores
    assert ran_under(remote, Limits(cpus=2))
    assert not ran_under(run(1, (0, 1), None), Limits(cpus=1))  # 2 cores for 1 CPU: asked
    unpinned = make_result(name="a", limits=Limits(cpus=0.5))
    assert ran_under(unpinned, Limits(cpus=0.5))
    assert not ran_under(unpinned, Limits(cpus=1))


def test_labels_written_before_leases_read_as_now() -> None:
    assert without_chosen_cores("cpus=1, cpuset=0, memory=1.0GiB") == "cpus=1, memory=1.0GiB"
    assert without_chosen_cores("cpus=2, cpuset=0,2") == "cpus=2"
    for kept in ("cpus=1, cpuset=0-1", "cpus=0.5, cpuset=3", "cpuset=3", "none", "cpus=1"):
        assert without_chosen_cores(kept) == kept


def _leased(core: int, limits: Limits = S1, chosen: bool = True) -> RunResult:
    return make_result(
        name="m",
        limits=dataclasses.replace(limits, cpuset=(core,)),
        lease=CoreLease((core,), 0.0, chosen=chosen),
    )


def test_leased_cores_are_said_apart_from_the_setting_each_distinct_once() -> None:
    """The rule every output names a cell's setting by: ``cpus=1`` and the cores apart."""
    runs = [_leased(0), _leased(0), _leased(1)]
    assert [setting(r) for r in runs] == ["cpus=1"] * 3
    # Per run: "leased cores 0 and 1" had read as two cores for a --cpus 1 device.
    assert leased_cores(runs) == " (each run leased one core: 0 or 1)"
    assert leased_cores(runs[:1]) == " (leased core 0)"
    pair = make_result(limits=Limits(cpus=2, cpuset="2-3"), lease=CoreLease((2, 3), 0.0, True))
    assert leased_cores([pair]) == " (leased cores 2-3)"
    other = make_result(limits=Limits(cpus=2, cpuset="0-1"), lease=CoreLease((0, 1), 0.0, True))
    assert leased_cores([pair, other]) == " (each run leased 2 cores: 2-3 or 0-1)"
    assert leased_cores([pair, runs[0]]) == " (each run leased its cores: 2-3 or 0)"
    # An explicit --cpuset is the setting: nothing leased to say apart.
    asked = _leased(1, chosen=False)
    assert (setting(asked), leased_cores([asked])) == ("cpus=1, cpuset=1", "")
    assert leased_cores([make_result(limits=S1)]) == ""
    # A file from before leases: its cpuset of exactly cpus cores was edgeprof's first free
    # ones, pinned, not leased (an upgrading user's old run had read no word of its core).
    old = make_result(limits=Limits(cpus=1, cpuset="0"), lease=None)
    assert (setting(old), leased_cores([old])) == ("cpus=1", " (pinned to core 0)")
    wide = make_result(limits=Limits(cpus=1, cpuset="0-1"), lease=None)  # asked: the setting
    assert (setting(wide), leased_cores([wide])) == ("cpus=1, cpuset=0-1", "")


def test_described_labels_other_limits_of_a_run_by_the_same_rule() -> None:
    """``fit``'s setting (the run's limits less the memory limit) had kept the leased core."""
    r = _leased(1, Limits(cpus=1, memory="256m"))
    assert described(dataclasses.replace(r.limits, memory=None), r.lease) == "cpus=1"
    assert described(r.limits, None) == "cpus=1, memory=256.0MiB"  # before leases
    assert described(Limits(cpus=1, cpuset="3"), CoreLease((3,), 0.0, False)) == (
        "cpus=1, cpuset=3"
    )


def test_cell_name_is_the_label_and_its_setting() -> None:
    assert cell_name(("m", "cpus=1")) == "m (cpus=1)"
    assert cell_name(("m", "")) == "m"  # --ignore-limits: no setting in the key
