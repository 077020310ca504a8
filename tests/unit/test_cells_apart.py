"""Runs of one label are one cell only where they are repeats: the same command, the same
``--env`` and (a bench's) the same target.  Otherwise :mod:`edgeprof.analysis.apart` names
them apart; and a figure only one side has is said, not dropped (compare, rankings)."""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

import pytest

from edgeprof.analysis.apart import apart, apart_sides
from edgeprof.analysis.cells import cells
from edgeprof.analysis.compare import summarize_cells
from edgeprof.analysis.regression import compare_results
from edgeprof.cli import main
from edgeprof.model import Limits, RunResult
from edgeprof.report.comparison import ranking_tables

from .conftest import make_result
from .gating_helpers import run as gated


def _run(*command: str, env: tuple[str, ...] | None = (), **kw: object) -> RunResult:
    return make_result(command=command, env=env, **kw)


def test_two_scripts_under_the_default_label_are_two_cells() -> None:
    """A tester's ``report mem1 iv0.1``: ``read_and_hold.py`` (peak 182.4MiB) and
    ``quickstart/infer.py`` (65.8MiB) read as 2 runs of ``python``, peak 124.1MiB ± 82.4MiB.
    Each is its own cell now, with its own peak."""
    hold = _run("python", "examples/memory/read_and_hold.py", "model.bin", "48")
    infer = _run("python", "examples/quickstart/infer.py", "--batch", "16", "--iterations", "100")
    hold, infer = (
        dataclasses.replace(r, memory=dataclasses.replace(r.memory, peak_bytes=peak))
        for r, peak in ((hold, 191213568), (infer, 69025792))  # the tester's result.json
    )
    assert [r.label for r in (hold, infer)] == ["python", "python"]
    named, notes = apart([hold, infer])
    assert [r.label for r in named] == [
        "python (examples/memory/read_and_hold.py model.bin 48)",
        "python (examples/quickstart/infer.py --batch 16 --iterations 100)",
    ]
    assert [len(g) for g in cells(named).values()] == [1, 1]
    (summaries,) = summarize_cells(named).values()
    peaks = {m.name: m.stat("peak_bytes") for m in summaries}
    assert [(s.n, s.mean, s.sd) for s in peaks.values() if s] == [
        (1, 191213568, 0.0),
        (1, 69025792, 0.0),
    ]
    assert notes == [
        "these runs share a label but not their commands (python): they are not repeats of "
        "one setting, so each such run is named with what differs and no cell pools two "
        "settings (--name labels a run as you choose)"
    ]


def test_one_script_with_other_arguments_is_named_by_the_arguments_that_differ() -> None:
    """``--iterations 100`` and ``300`` of one script had made a latency row of ITER 200, the
    median of the two; the shared words are left out, an option's name kept with its value."""
    runs = [
        _run("python", "infer.py", "--iterations", "100", "--batch", "16"),
        _run("python", "infer.py", "--iterations", "300", "--batch", "16"),
        _run("python", "infer.py", "--iterations", "100", "--batch", "16"),
    ]
    named, _ = apart(runs)
    assert [r.label for r in named] == [
        "python (--iterations 100)",
        "python (--iterations 300)",
        "python (--iterations 100)",
    ]
    assert [len(g) for g in cells(named).values()] == [2, 1]
    # A command that would show nothing keeps one more shared word.
    named, _ = apart([_run("python", "a.py"), _run("python", "a.py", "--fast")])
    assert [r.label for r in named] == ["python (a.py)", "python (a.py --fast)"]


def test_env_settings_split_a_label_and_an_older_file_is_not_told_apart_by_them() -> None:
    """Two benches of one target under ``-E THREADS=1`` and ``-E THREADS=2`` were 2
    repeats ("≈ within noise").  Only the keys that differ are shown; a file from before
    ``env`` was recorded (``None``) does not split a label by itself."""
    target = "ortbench.py:infer, loader load"

    def bench(env: tuple[str, ...] | None) -> RunResult:
        # The boot source differs between edgeprof versions: it never splits a label.
        boot = "boot-v1" if env is None else "boot-v2"
        command = ("python3", "-c", boot, "ortbench.py:infer", "--batch-size", "1")
        return make_result(name="infer bs=1", target=target, command=command, env=env)

    one, two = bench(("THREADS=1", "X=1")), bench(("X=1", "THREADS=2"))
    named, notes = apart([one, two, one, bench(None)])
    assert [r.label for r in named] == [
        "infer bs=1 (THREADS=1)",
        "infer bs=1 (THREADS=2)",
        "infer bs=1 (THREADS=1)",
        "infer bs=1 (-E not recorded)",
    ]
    assert [len(g) for g in cells(named).values()] == [2, 1, 1]
    # A bench has no --name: the note does not advise it (a verifier's); its runs' names
    # say what differs.
    assert notes == [
        "these runs share a label but not their -E settings (infer bs=1): they are not "
        "repeats of one setting, so each such run is named with what differs and no cell "
        "pools two settings; only -E settings are recorded, not the environment a run "
        "inherited"
    ]
    named, _ = apart([one, bench(("X=1",))])
    assert [r.label for r in named] == ["infer bs=1 (THREADS=1)", "infer bs=1 (no -E THREADS)"]
    # Pooled, as nothing says the older file's environment differed, but said.
    assert apart([one, bench(None)]) == (
        [one, bench(None)],
        [
            "some runs of infer bs=1 come from files that did not record their -E settings "
            "(an older edgeprof), pooled with runs under recorded ones (infer bs=1: -E "
            "THREADS=1 X=1): nothing says they ran under the same"
        ],
    )
    # An older file beside runs without -E: nothing recorded to differ from, no note.
    assert apart([bench(()), bench(None)]) == ([bench(()), bench(None)], [])


def test_a_run_without_e_is_not_said_to_have_its_variables_unset() -> None:
    """``run -E A=1 -E B=2`` beside ``A=1 B=2 edgeprof run`` (inherited, not recorded) was
    labelled "job (A unset B unset)": edgeprof cannot know that (a verifier's).  The label
    says what it knows, and the note that only -E is recorded; a plain run's note keeps
    --name's advice, and one of a run and a bench says it is a run's."""
    given = _run("python3", "w.py", env=("A=1", "B=2"), name="job")
    inherited = _run("python3", "w.py", env=(), name="job")
    half = _run("python3", "w.py", env=("A=1",), name="job")
    named, notes = apart([given, inherited, half])
    assert [r.label for r in named] == ["job (A=1 B=2)", "job (no -E A, B)", "job (A=1, no -E B)"]
    assert notes == [
        "these runs share a label but not their -E settings (job): they are not repeats of "
        "one setting, so each such run is named with what differs and no cell pools two "
        "settings; only -E settings are recorded, not the environment a run inherited "
        "(--name labels a run as you choose)"
    ]
    bench = make_result(name="infer bs=1", target="b.py:infer, loader load", env=("T=1",))
    _, notes = apart([given, inherited, bench, dataclasses.replace(bench, env=("T=2",))])
    assert notes[0].endswith("inherited (--name labels a run or a bench as you choose)")


def test_a_sweeps_runs_and_repeats_keep_their_labels() -> None:
    """A sweep's models (one command each, ``-m`` appended) under two limit settings, each
    repeated: every label's runs agree, so nothing is renamed and no note is said."""
    runs = [
        _run("python", "model.py", m, name=m, limits=lim)
        for lim in (make_result().limits, dataclasses.replace(make_result().limits, cpus=0.5))
        for m in ("20", "40")
        for _ in range(3)
    ]
    assert apart(runs) == (runs, [])
    assert [len(g) for g in cells(runs).values()] == [3, 3, 3, 3]


def test_compare_names_apart_what_differs_within_a_side_not_between_the_sides() -> None:
    """Another ``--env`` between the baseline and the current runs is the change compare
    measures: paired as before.  Two settings within one side are named apart on both."""
    base = [_run("python", "a.py", env=("T=1",))]
    cur = [_run("python", "a.py", env=("T=2",))]
    assert apart_sides(base, cur) == (base, cur, [])
    cur2 = [*cur, _run("python", "a.py", env=("T=1",))]
    b, c, notes = apart_sides(base, cur2)
    assert [r.label for r in b] == ["python (T=1)"]
    assert [r.label for r in c] == ["python (T=2)", "python (T=1)"]
    assert notes[0].startswith("the baseline and current results share a label but not their")
    # An older baseline (env not recorded) against runs under -E: paired, not pooled.
    old = [_run("python", "a.py", env=None)]
    assert apart_sides(old, cur) == (old, cur, [])
    _, _, notes = apart_sides(old, [*cur, *old])
    assert notes == [
        "some runs of python come from files that did not record their -E settings (an "
        "older edgeprof), pooled with runs under recorded ones (python: -E T=2): nothing "
        "says they ran under the same"
    ]


def test_a_run_records_its_env_overrides_and_older_files_read_as_not_recorded(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """``result.json`` had no word of ``-E``: two runs of one command under ``THREADS=1`` and
    ``THREADS=2`` were one cell of 2 runs in ``report``.  The overrides are recorded as given
    (not edgeprof's own thread counts), and the report keeps the two apart."""
    for threads in ("1", "2"):
        argv = ["run", "--backend", "fake", "-E", f"THREADS={threads}", "-E", "B=x y",
                "--out", str(tmp_path / f"t{threads}"), "--", "python3", "-c", "pass"]  # fmt: skip
        assert main(argv) == 0
    doc = json.loads((tmp_path / "t2" / "result.json").read_text())
    assert doc["env"] == ["THREADS=2", "B=x y"]
    assert RunResult.from_dict(doc).env == ("THREADS=2", "B=x y")
    capfd.readouterr()
    both = [str(tmp_path / "t1"), str(tmp_path / "t2")]
    assert main(["report", *both, "--out", str(tmp_path / "rep")]) == 0
    with (tmp_path / "rep" / "cells.csv").open() as f:
        assert [(r["label"], r["runs"]) for r in csv.DictReader(f)] == [
            ("python3 (THREADS=1)", "1"),
            ("python3 (THREADS=2)", "1"),
        ]
    assert "note: these runs share a label but not their -E settings (python3)" in (
        capfd.readouterr().out
    )
    del doc["env"]  # as written before env was recorded
    assert RunResult.from_dict(doc).env is None
    plain = _run("python3", "x.py")
    assert plain.to_dict()["env"] == [] and RunResult.from_dict(plain.to_dict()) == plain


def test_compare_says_a_figure_only_the_current_runs_have() -> None:
    """The baseline's runs were all too short for an average memory, the current's 3 had
    one: the avg memory row went without a word.  One note line says it now, and why."""
    short = [dataclasses.replace(r, memory=dataclasses.replace(r.memory, avg_bytes=None))
             for r in (gated("20"), gated("20"), gated("20"))]  # fmt: skip
    current = [gated("20", avg_mib=70)] * 3
    changes, notes = compare_results(short, current)
    assert "avg_memory" not in {c.metric.key for c in changes}
    assert "peak_memory" in {c.metric.key for c in changes}
    assert notes == [
        "20 (cpus=1, memory=1.0GiB): not compared, what the current runs measured and the "
        "baseline's did not: avg memory (fewer than two of each run's readings (every 0.1s) "
        "fell while it ran: --interval 0.01 reads them finer)"
    ]


def test_a_ranking_with_one_model_measured_says_who_has_no_figure() -> None:
    """Sweep ``sw``'s "Ranking by avg memory under cpus=1" was left out because model 20
    had no figure: the table is there with the one that has it, and the note."""
    twenty = [dataclasses.replace(r, memory=dataclasses.replace(r.memory, avg_bytes=None))
              for r in (gated("20"), gated("20"))]  # fmt: skip
    forty = [gated("40", avg_mib=80), gated("40", avg_mib=90)]
    tables = {t.title: t for t in ranking_tables(summarize_cells([*twenty, *forty]))}
    avg = tables["Ranking by avg memory under cpus=1, memory=1.0GiB (smallest first)"]
    assert [row[:4] for row in avg.rows[1:]] == [["1", "40", "85.0MiB", "85.0MiB ± 7.1MiB"]]
    assert avg.notes == ["not ranked, no figure of avg memory in their runs: 20 (see the warnings)"]
    # Both with the figure: ranked as before; neither: no table.
    assert "Ranking by avg memory under cpus=1, memory=1.0GiB (smallest first)" not in {
        t.title for t in ranking_tables(summarize_cells(twenty))
    }


def test_runs_that_differ_only_with_their_limits_keep_their_label() -> None:
    """Two boards' sweeps of one model: the devices' thread pools differ with their limits
    (cpus=1.2 and 0.5), so no cell pools unlike runs, and every label had read "small
    (OMP_NUM_THREADS=2 …)" (a tester's ``report sweep1 merged``).  Within a cell the env
    still names them apart, in every cell of the label."""
    b, a = Limits(cpus=1.2, memory="512m"), Limits(cpus=0.5, memory="512m")
    on_b = [_run("python", "m.py", name="small", env=("OMP_NUM_THREADS=2",), limits=b)] * 2
    on_a = [_run("python", "m.py", name="small", env=("OMP_NUM_THREADS=1",), limits=a)] * 2
    named, notes = apart([*on_b, *on_a])
    assert [r.label for r in named] == ["small"] * 4 and notes == []
    mixed = _run("python", "m.py", name="small", env=("OMP_NUM_THREADS=4",), limits=a)
    named, notes = apart([*on_b, *on_a, mixed])
    assert {r.label for r in named} == {
        "small (OMP_NUM_THREADS=2)",
        "small (OMP_NUM_THREADS=1)",
        "small (OMP_NUM_THREADS=4)",
    }
    assert notes


def test_two_boards_of_the_same_limits_are_two_cells() -> None:
    """``report dev-boardA dev-boardC`` of two boards with the same limits had pooled them,
    a cell headed "device boardA … 6 runs" beside its memory line's "(device boardC)" (a
    user's).  Named by device, as compare says "ran different devices"."""
    lim = Limits(cpus=0.5, memory="256m")
    a = [_run("python", "m.py", name="mid", device="boardA", limits=lim)] * 3
    c = [_run("python", "m.py", name="mid", device="boardC", limits=lim)] * 3
    plain = _run("python", "m.py", name="mid", limits=lim)
    named, notes = apart([*a, *c, plain])
    assert [r.label for r in named] == [
        *["mid (device boardA)"] * 3, *["mid (device boardC)"] * 3, "mid (no --device)"
    ]
    assert len(cells(named)) == 3
    assert notes == [
        "these runs share a label but not their devices (mid): they are not repeats of one "
        "setting, so each such run is named with what differs and no cell pools two settings "
        "(--name labels a run as you choose)"
    ]
    # One board's runs stay as they were.
    assert apart(a) == (a, [])
    # Three kinds differing: listed with commas.
    other = _run("python", "m.py", "--x", name="mid", env=("A=1",), device="boardC", limits=lim)
    _, notes = apart([*a, other])
    assert "not their commands, -E settings and devices (mid)" in notes[0]
