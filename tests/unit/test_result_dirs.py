"""Which results a directory's report reads: the shapes edgeprof writes, to a bounded depth,
and what it says when a directory pools several outputs."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from edgeprof.errors import ConfigError
from edgeprof.model import RunResult
from edgeprof.report.saved import pooled
from edgeprof.report.saved_notes import skipped_profiles
from edgeprof.resultdirs import result_files, sources_below
from edgeprof.resultfiles import SWEEP_SCHEMA, load_runs
from edgeprof.storage import layers_profile_note, write_result

from .conftest import make_result
from .test_layers_checks import profile_file

_STARTS = itertools.count()


def _run(directory: Path, name: str) -> RunResult:
    """A run of its own (a start of its own: runs alike in every field are one run read
    twice, :func:`edgeprof.resultfiles.once`)."""
    directory.mkdir(parents=True, exist_ok=True)
    started = f"2026-01-01T00:00:00.{next(_STARTS) % 1000:03}+00:00"
    result = make_result(name=name, started_at=started)
    write_result(directory / "result.json", result)
    return result


def _sweep(directory: Path, *names: str) -> None:
    """A sweep's ``--out``: its ``sweep.json`` and each run's directory under it."""
    runs = [_run(directory / n / "1", n) for n in names]
    doc = {"schema": SWEEP_SCHEMA, "runs": [r.to_dict() for r in runs], "cells": []}
    (directory / "sweep.json").write_text(json.dumps(doc))


def test_a_directory_is_read_to_four_levels_below_it_and_no_deeper(tmp_path: Path) -> None:
    _run(tmp_path / "a" / "b" / "c" / "d", "deepest")  # 4 levels: read
    _run(tmp_path / "a" / "b" / "c" / "d" / "e" / "f", "too-deep")  # 5 levels under a run
    _run(tmp_path / "x" / "b" / "c" / "d" / "e", "too-deep")  # 5 levels: not looked at
    assert [r.name for r in load_runs([tmp_path])] == ["deepest"]
    assert result_files(tmp_path) == [tmp_path / "a/b/c/d/result.json"]


def test_a_tree_with_results_only_deeper_is_one_line_naming_what_was_looked_for(
    tmp_path: Path,
) -> None:
    _run(tmp_path / "1" / "2" / "3" / "4" / "5", "stray")  # another project's fixture
    with pytest.raises(ConfigError) as raised:
        load_runs([tmp_path])
    assert str(raised.value) == (
        f"{tmp_path}: no result.json or sweep.json in it or in the 4 levels of directories "
        "below it"
    )


def test_a_sweep_is_read_through_its_sweep_json_not_its_run_files(tmp_path: Path) -> None:
    _sweep(tmp_path / "sw", "a", "b")
    _run(tmp_path / "sw" / "old" / "1", "stale")  # an earlier sweep's run left beside it
    assert [r.name for r in load_runs([tmp_path / "sw"])] == ["a", "b"]
    # As one of a directory's sweeps too: its stale run had been read with it.
    assert [r.name for r in load_runs([tmp_path])] == ["a", "b"]
    assert result_files(tmp_path) == [tmp_path / "sw" / "sweep.json"]


def test_a_benchs_runs_and_a_run_dir_are_read_and_warmups_left_out(tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    for bs in (8, 1):
        for k in (2, 10, 1):
            _run(bench / f"bs{bs}" / str(k), f"bs={bs} {k}")
    _run(bench / "bs1" / "warmup-1", "warm")
    names = [r.name for r in load_runs([bench])]
    assert names == [f"bs={bs} {k}" for bs in (1, 8) for k in (1, 2, 10)]
    runs = [bench / f"bs{b}" / str(k) for b in (1, 8) for k in (1, 2, 10)]
    assert sources_below(bench) == ([], runs)
    assert pooled(bench, "report") is None  # one bench: nothing pooled to say
    _run(tmp_path / "one", "single")
    _run(tmp_path / "one" / "x", "below a run")  # a run's directory holds one run
    assert [r.name for r in load_runs([tmp_path / "one"])] == ["single"]


def test_a_linked_directory_is_not_walked_into(tmp_path: Path) -> None:
    _run(tmp_path / "real" / "r", "r")
    (tmp_path / "real" / "loop").symlink_to(tmp_path / "real")
    assert [r.name for r in load_runs([tmp_path / "real"])] == ["r"]


def test_a_directory_of_sweeps_and_stray_runs_says_it_pools_them(tmp_path: Path) -> None:
    _sweep(tmp_path / "sw1", "8")
    _sweep(tmp_path / "sw2", "8")
    _run(tmp_path / "deep" / "a" / "r", "8")
    assert [r.name for r in load_runs([tmp_path])] == ["8", "8", "8"]
    assert pooled(tmp_path, "report") == (
        f"{tmp_path} holds 2 sweeps (sw1, sw2) and 1 run(s) outside them (deep/a/r): their "
        "runs are pooled, cell by cell; report one sweep or run's directory to hold them apart"
    )
    assert pooled(tmp_path / "sw1", "report") is None


def test_a_fits_out_is_one_output_and_two_fits_are_pooled_said(tmp_path: Path) -> None:
    for name in ("f1", "f2"):
        fit = tmp_path / name
        _sweep(fit / "reference", "ref")
        _run(fit / "probe-01", "probe")
        (fit / "fit.json").write_text("{}")
    assert sources_below(tmp_path / "f1") == ([], [])
    assert pooled(tmp_path / "f1", "report") is None
    assert [r.name for r in load_runs([tmp_path / "f1"])] == ["probe", "ref"]
    assert pooled(tmp_path, "compare") == (
        f"{tmp_path} holds 2 fits (f1, f2): their runs are pooled, cell by cell; compare one "
        "fit's directory to hold them apart"
    )


def test_report_of_a_directory_prints_the_pooled_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from edgeprof.cli import main

    _sweep(tmp_path / "sw1", "m")
    _sweep(tmp_path / "sw2", "m")
    assert main(["report", str(tmp_path)]) == 0
    assert (
        f"note: {tmp_path} holds 2 sweeps (sw1, sw2): their runs are pooled, cell by cell; "
        "report one sweep's directory to hold them apart"
    ) in capsys.readouterr().out.splitlines()


def test_report_of_two_sweeps_by_name_says_which_cells_it_pools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report sw1 sw2`` pools the cells both hold, as ``report`` of their directory does,
    and says so (it had pooled a user's two sweeps into one cell of 7 runs unsaid); sweeps
    of no shared cell are not said to pool anything."""
    from edgeprof.cli import main

    _sweep(tmp_path / "sw1", "m", "a")
    _sweep(tmp_path / "sw2", "m", "b")
    _sweep(tmp_path / "sw3", "c")
    sw1, sw2, sw3 = (str(tmp_path / n) for n in ("sw1", "sw2", "sw3"))
    assert main(["report", sw1, sw2]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if "pooled" in line]
    assert notes == [
        f"note: {sw1}, {sw2} share 1 model/limits cell (m (cpus=1.5, cpuset=0-1, "
        "memory=512.0MiB)): their runs are pooled, cell by cell; report one of them to hold "
        "them apart, or compare them"
    ]
    assert main(["report", sw1, sw3]) == 0
    assert "pooled" not in capsys.readouterr().out


def test_profiles_are_looked_for_only_where_results_are(tmp_path: Path) -> None:
    """A whole tree had been searched for per-layer YAML (``report ~``)."""
    near, deep = tmp_path / "1" / "2", tmp_path / "1" / "2" / "3" / "4" / "5"
    deep.mkdir(parents=True)
    profile_file(deep, [{}])
    assert skipped_profiles([tmp_path]) is None
    vit = profile_file(near, [{}])
    said = f"skipped a per-layer profile: {layers_profile_note(vit)}"
    assert skipped_profiles([tmp_path]) == said
