"""edgeprof.analysis.cells: the one grouping of runs into (model, limit setting) cells."""

from __future__ import annotations

from edgeprof.analysis.cells import cell_key, cells, cells_by_setting, group_by, successful
from edgeprof.analysis.compare import summarize_cells
from edgeprof.model import Limits, RunResult, Termination

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
