"""Repeats, statistics and rankings of several models' runs."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import pytest

from edgeprof.analysis.compare import Stat, rank, summarize, summarize_cells
from edgeprof.cli import main
from edgeprof.measure.runner import profile
from edgeprof.model import RunResult, Termination
from edgeprof.report.comparison import ranking_tables
from tests.fakes import FakeBackend, linear


def test_stat_hand_computed() -> None:
    s = Stat.of([1.0, 2.0, 4.0])
    assert s is not None
    assert (s.mean, s.min, s.max, s.n) == (7 / 3, 1.0, 4.0, 3)
    assert math.isclose(
        s.sd, math.sqrt(((1 - 7 / 3) ** 2 + (2 - 7 / 3) ** 2 + (4 - 7 / 3) ** 2) / 2)
    )
    assert Stat.of([5.0]) == Stat(5.0, 0.0, 5.0, 5.0, 1)
    assert Stat.of([]) is None


def _runs(name: str, cpu_pct: float, memory: int, n: int = 2) -> list:  # type: ignore[type-arg]
    be = FakeBackend(linear(cpu_pct=cpu_pct, memory_bytes=memory, peak_bytes=memory))
    # Read every 0.05 s: a 0.2 s run has its two readings for an average memory.
    return [profile(["sleep", "0.2"], backend=be, name=name, interval=0.05) for _ in range(n)]


def test_summaries_rank_by_mean_and_list_failures() -> None:
    results = _runs("small", 20, 10 << 20) + _runs("big", 80, 50 << 20)
    be = FakeBackend(linear(cpu_pct=50, memory_bytes=1))
    results += [profile(["sh", "-c", "exit 3"], backend=be, name="big")]
    sums = summarize(results)
    assert [m.name for m in sums] == ["small", "big"]
    big = sums[1]
    assert len(big.runs) == 3 and len(big.failures) == 1 and big.cpu_s and big.cpu_s.n == 2
    assert [r.name for r in rank(sums, "cpu_s")] == ["small", "big"]
    assert [r.name for r in rank(sums, "peak_bytes")] == ["small", "big"]
    assert big.warnings()[0] == "run 3 failed (exit 3): left out of the statistics"
    titles = [t.plain().splitlines()[0] for t in ranking_tables(summarize_cells(results))]
    assert [re.split(" under | with no limits", t)[0] for t in titles] == [
        "Ranking by wall time",
        "Ranking by CPU time",
        "Ranking by peak memory",
        "Ranking by avg memory",
    ]
    assert all(r.termination is Termination.EXITED for r in results)


def test_a_model_without_the_figure_is_named_under_its_ranking() -> None:
    """Runs too short for an average memory: the model was missing from that ranking
    without a word.  A model whose every run failed is named under each ranking, with how
    its runs ended (only its runs' warnings had said it, far from the rankings)."""
    short = [
        dataclasses.replace(r, memory=dataclasses.replace(r.memory, avg_bytes=None))
        for r in _runs("short", 30, 20 << 20)
    ]
    be = FakeBackend(linear(cpu_pct=50, memory_bytes=1))
    failed = [profile(["sh", "-c", "exit 3"], backend=be, name="failed")]
    runs = _runs("a", 20, 10 << 20) + _runs("b", 80, 50 << 20) + short + failed
    notes = {
        re.split(" under | with no limits", t.plain().splitlines()[0])[0]: t.notes
        for t in ranking_tables(summarize_cells(runs))
    }
    unranked = {title: [n for n in ns if n.startswith("not ranked")] for title, ns in notes.items()}
    assert unranked.pop("Ranking by avg memory") == [
        "not ranked, no figure of avg memory in their runs: short (see the warnings)",
        "not ranked, every run failed: failed (exit 3)",
    ]
    assert unranked and all(
        ns == ["not ranked, every run failed: failed (exit 3)"] for ns in unranked.values()
    )


def test_a_setting_only_one_model_survived_says_so_in_the_rankings() -> None:
    """A tester's --memory 192m,512m sweep: fp32 OOM-killed under 192m got statistics alone
    there, no ranking and no word that int8 alone fits, the answer a device is chosen by."""
    from tests.unit.gating_helpers import run

    oom = [run("fp32", memory="192m", termination=Termination.OOM, exit_code=137)] * 2
    runs = [run("int8", memory="192m")] * 2 + oom + [run("int8")] * 2 + [run("fp32")] * 2
    tables = ranking_tables(summarize_cells(runs))
    alone = [t for t in tables if "192.0MiB" in t.title]
    assert len(alone) == 1 and alone[0].plain().splitlines() == [
        "Ranking under cpus=1, memory=192.0MiB",
        "MODEL  RUNS",
        "-----  -------------------------",
        "int8   2 of 2 succeeded",
        "fp32   0 of 2 succeeded (oom ×2)",
        "only int8 succeeded under cpus=1, memory=192.0MiB: every run of fp32 (oom ×2) "
        "failed, so nothing is ranked against it; OOM-killed in every run, fp32 did not fit "
        "in its memory limit",
    ]
    # Under 1g both ran: ranked by each metric, as before.
    under_1g = [t.title for t in tables if "1.0GiB" in t.title]
    assert under_1g and all(t.startswith("Ranking by ") for t in under_1g)
    # One model alone, with no other that failed: nothing to say, as before.
    assert ranking_tables(summarize_cells(runs[:2])) == []
    # Failed otherwise than OOM: no word of a memory limit.
    crashed = [run("fp32", memory="192m", exit_code=1)] * 2
    (t,) = ranking_tables(summarize_cells(runs[:2] + crashed))
    assert t.notes == [
        "only int8 succeeded under cpus=1, memory=192.0MiB: every run of fp32 (exit 1 ×2) "
        "failed, so nothing is ranked against it"
    ]
    # A service --timeout stopped is no failure, nor a success: "only sleep succeeded" had
    # sat over its row's "0 of 2 succeeded (timeout ×2)" (a user's).
    service = [run("int8", memory="192m", termination=Termination.TIMEOUT, exit_code=143)] * 2
    (t,) = ranking_tables(summarize_cells(service + crashed))
    assert t.notes[0].startswith("only int8 ran to its --timeout under cpus=1, memory=192.0MiB")
    (t,) = ranking_tables(summarize_cells(service[:1] + runs[:1] + crashed))
    assert t.notes[0].startswith("only int8 succeeded or ran to its --timeout under")


def test_a_model_alone_under_its_setting_is_named_not_left_out() -> None:
    """A soak tester's run at 512m beside five at 256m: in no ranking and no note."""
    from tests.unit.gating_helpers import run

    runs = [run("a", memory="256m")] * 2 + [run("b", memory="256m")] * 2
    runs += [run("big", memory="512m")]
    tables = ranking_tables(summarize_cells(runs))
    alone = [t for t in tables if "512.0MiB" in t.title]
    assert len(alone) == 1 and alone[0].plain().splitlines() == [
        "Ranking under cpus=1, memory=512.0MiB",
        "MODEL  RUNS",
        "-----  ----------------",
        "big    1 of 1 succeeded",
        "big alone ran under cpus=1, memory=512.0MiB: nothing is ranked against it; the "
        "other models are ranked under cpus=1, memory=256.0MiB",
    ]
    assert all(t.title.startswith("Ranking by ") for t in tables if "256.0MiB" in t.title)
    # One model over several limits ranks nothing anywhere: no table, as before.
    one = [run("a", memory="256m")] * 2 + [run("a", memory="512m")] * 2
    assert ranking_tables(summarize_cells(one)) == []


def test_a_model_the_timeout_stopped_is_not_said_to_have_failed() -> None:
    """A soak tester's service, stopped by --timeout after a clean shutdown (exit 0):
    ``report`` had said "not ranked, every run failed: … (timeout)"."""
    from tests.unit.gating_helpers import run

    svc = run("svc", termination=Termination.TIMEOUT, exit_code=0)
    runs = [run("a")] * 2 + [run("b")] * 2 + [svc, run("bad", exit_code=3)]
    tables = ranking_tables(summarize_cells(runs))
    notes = [n for n in tables[0].notes if n.startswith("not ranked")]
    assert notes == [
        "not ranked, --timeout stopped every run: svc (its whole-run figures are of the time "
        "it ran, not of a run that ended by itself; its per-iteration figures are ranked)",
        "not ranked, every run failed: bad (exit 3)",
    ]
    cell = next(m for ms in summarize_cells(runs).values() for m in ms if m.name == "svc")
    assert cell.warnings()[0] == (
        "run 1 was stopped by --timeout (timeout): left out of the whole-run statistics; its "
        "per-iteration ones count"
    )


def test_close_neighbours_are_marked_as_within_noise() -> None:
    cells = summarize_cells(_runs("a", 50, 10 << 20) + _runs("b", 50, 10 << 20))
    peak = next(t for t in ranking_tables(cells) if "peak memory" in t.plain().splitlines()[0])
    assert "≈ a: within noise" in peak.plain()


def test_cli_models_are_one_argument_each(tmp_path, capfd: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    seen = tmp_path / "seen"
    code = main(
        [
            "run",
            "--backend",
            "fake",
            "-m",
            "a.tflite,Mobile Net v2,x",
            "--",
            "sh",
            "-c",
            f'printf "%s\\n" "$1" >> {seen}',
            "sh",
        ]
    )
    assert code == 0
    assert seen.read_text().splitlines() == ["a.tflite", "Mobile Net v2", "x"]
    out = capfd.readouterr().out
    assert "Ranking by CPU time" in out and "Mobile Net v2" in out


def test_cli_model_file_and_repeat(tmp_path, capfd: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "models.txt"
    f.write_text("# the family\nm1\n\nm2\n")
    out_dir = tmp_path / "out"
    assert (
        main(
            [
                "run",
                "--backend",
                "fake",
                "-f",
                str(f),
                "--repeat",
                "2",
                "--out",
                str(out_dir),
                "--",
                "true",
            ]
        )
        == 0
    )
    assert sorted(p.relative_to(out_dir).as_posix() for p in out_dir.glob("*/*/result.json")) == [
        "m1/1/result.json",
        "m1/2/result.json",
        "m2/1/result.json",
        "m2/2/result.json",
    ]
    assert "Statistics with no limits" in capfd.readouterr().out  # had been "under none"


@pytest.mark.parametrize(
    "args, message",
    [
        (["-m", "a,,b"], "empty model name"),
        (["--repeat", "0"], "--repeat 0"),
        (["-m", "a", "-f", "x"], "not both"),
        (["-f", "/nonexistent/models.txt"], "cannot read model file"),
    ],
)
def test_cli_bad_model_lists(
    args: list[str], message: str, capfd: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "--backend", "fake", *args, "--", "true"]) == 2
    err = capfd.readouterr().err
    assert err.startswith("edgeprof: error:") and message in err and err.count("\n") == 1


def test_stat_median_mad_and_outliers_hand_computed() -> None:
    s = Stat.of([10.0, 11.0, 10.5, 30.0, 10.2])
    assert s is not None
    assert s.median == 10.5
    # |x - 10.5| = 0.5, 0.5, 0, 19.5, 0.3 → sorted 0, 0.3, 0.5, 0.5, 19.5 → MAD 0.5
    assert math.isclose(s.mad, 0.5)
    # the outlier rule (tests/unit/test_outliers.py): 30.0 is 186 % off the median
    assert s.outliers() == [3]
    assert Stat.of([1.0, 2.0]).outliers() == []  # type: ignore[union-attr]
    # three equal runs and one 80 % off: a MAD of 0 no longer hides it
    assert Stat.of([5.0, 5.0, 5.0, 9.0]).outliers() == [3]  # type: ignore[union-attr]


def test_cell_warnings_name_the_outlier_and_a_slow_first_run() -> None:
    from tests.unit.conftest import make_result

    walls = [2.0, 1.0, 1.05, 0.95, 1.02]
    runs = [make_result(wall_s=w, name="m") for w in walls]
    (m,) = summarize(runs)
    assert m.wall_s is not None and m.wall_s.median == 1.02
    warnings = m.warnings()
    outlier = (
        "run 1 is an outlier in wall time: 2.00s, 96% above the median 1.02s; the median and "
        "the ranking's order discount it; the mean ± sd, the ranking's ≈ test, its [95%] "
        "brackets and compare's change include it, and a note says the test without it "
        "beside a ≈ or a compare verdict of no change (re-run the cell, add repeats, or "
        "measure on a quieter machine)"
    )
    assert outlier in warnings, warnings
    # 2.0 s against the median 1.01 s of the others
    assert "the first run took 1.98× the median wall time of the others" in "\n".join(warnings)
    calm = summarize([make_result(wall_s=w, name="m") for w in (1.0, 1.1, 0.9)])[0]
    assert calm.warnings() == []


def test_a_time_outlier_held_off_its_cpus_apart_from_the_others_says_so() -> None:
    """A researcher's fast latency outliers were the least held-off runs (17 and 28 % against
    34–49 %), told only to "re-run the cell … or measure on a quieter machine"."""
    import dataclasses

    from tests.unit.conftest import make_result

    def run(wall: float, held: float) -> RunResult:
        r = make_result(wall_s=wall, name="m")
        return dataclasses.replace(r, cpu=dataclasses.replace(r.cpu, held_s=held, throttled_s=0.0))

    held = summarize([run(1.0, 0.1), run(1.02, 0.1), run(0.98, 0.1), run(2.0, 1.1)])[0]
    said = [w for w in held.warnings() if "outlier in wall time" in w]
    assert said == [
        "run 4 is an outlier in wall time: 2.00s, 98% above the median 1.01s; the median and "
        "the ranking's order discount it; the mean ± sd, the ranking's ≈ test, its [95%] "
        "brackets and compare's change include it, and a note says the test without it "
        "beside a ≈ or a compare verdict of no change (other tasks held it off its CPUs 55% "
        "of its wall time, the others a median 10%: the host's load, not the workload; "
        "measure on a quieter machine)"
    ]
    # Held off alike: nothing tells the cause, the usual advice stands.
    alike = summarize([run(1.0, 0.1), run(1.02, 0.1), run(0.98, 0.1), run(2.0, 0.2)])[0]
    (line,) = [w for w in alike.warnings() if "outlier in wall time" in w]
    assert line.endswith("(re-run the cell, add repeats, or measure on a quieter machine)")


def test_an_outlier_is_numbered_among_all_the_cells_runs() -> None:
    """Its number had been its place among the measured values: a cell whose run 1 failed
    called its run 4 "run 3", beside "run 1 failed"."""
    import dataclasses

    from tests.unit.conftest import make_result

    failed = dataclasses.replace(
        make_result(wall_s=0.1, name="m"), termination=Termination.EXITED, exit_code=1
    )
    runs = [failed, *(make_result(wall_s=w, name="m") for w in (1.0, 1.02, 2.0, 0.98))]
    warnings = summarize(runs)[0].warnings()
    assert warnings[0] == "run 1 failed (exit 1): left out of the statistics"
    assert any(w.startswith("run 4 is an outlier in wall time: 2.00s") for w in warnings)


def _slow_first(warnings: list[str]) -> str:
    (said,) = [w for w in warnings if w.startswith("the first run took")]
    return said.partition("(cold caches?): ")[2]


def test_a_slow_first_run_after_a_warm_up_is_not_told_to_warm_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """"consider --warmup 1" had been said of a sweep run with --warmup 1."""
    from edgeprof.resultfiles import SWEEP_SCHEMA
    from tests.unit.conftest import make_result

    runs = [make_result(wall_s=w, name="m") for w in (1.4, 1.0, 1.05, 0.95)]
    said = {n: _slow_first(summarize(runs, warmup=n)[0].warnings()) for n in (0, 1, 2, None)}
    assert said == {
        0: "consider --warmup 1",
        1: "the 1 warm-up run(s) before it did not remove it: consider --warmup 2 or more",
        2: "the 2 warm-up run(s) before it did not remove it: consider --warmup 3 or more",
        None: "warm-up runs (--warmup N) leave such a run out; after warm-ups, a larger N",
    }
    # From the sweep's own plan: report of a sweep.json made with --warmup 1.
    doc = {"schema": SWEEP_SCHEMA, "warmup": 1, "runs": [r.to_dict() for r in runs]}
    (tmp_path / "sweep.json").write_text(json.dumps(doc))
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "again")]) == 0
    out = capsys.readouterr().out
    assert "the 1 warm-up run(s) before it did not remove it" in out
    assert "consider --warmup 1" not in out
    again = json.loads((tmp_path / "again" / "sweep.json").read_text())
    assert "did not remove it" in again["cells"][0]["warnings"][-1]
    assert "did not remove it" in (tmp_path / "again" / "report.md").read_text()


def _held(wall: float, held: float | None) -> RunResult:
    from tests.unit.conftest import make_result

    r = make_result(wall_s=wall, name="m")
    # Its CPU time what the others left it: no more than its CPUs give in the rest.
    cpu = dataclasses.replace(r.cpu, held_s=held, throttled_s=0.0, total_s=wall - (held or 0))
    return dataclasses.replace(r, cpu=cpu)


def test_a_first_run_slow_only_in_time_held_off_its_cpus_is_not_called_cold() -> None:
    """cur2's run 1 of `200`: wall 0.874 s, 0.611 s of it held off by other tasks (its CPU
    time less than later runs'), had been told "1.40× the median wall time of the others (cold
    caches?): consider --warmup 1"; the others' walls 0.208, 0.625, 0.645 s."""
    held = [(0.874, 0.611), (0.208, 0.0), (0.625, 0.36), (0.645, 0.38)]
    (m,) = summarize([_held(w, h) for w, h in held], warmup=0)
    assert not [w for w in m.warnings() if "first run" in w]
    # Slow in its own time: said, and which time (0.9 / median(0.208, 0.265, 0.265) = 3.40).
    held[0] = (1.0, 0.1)
    (m,) = summarize([_held(w, h) for w, h in held], warmup=0)
    assert [w for w in m.warnings() if "first run" in w] == [
        "the first run took 3.40× the median wall time, less the time other tasks held each "
        "run off its CPUs, of the others (cold caches?): consider --warmup 1"
    ]
    # No run held off (or none measured it): the plain wall time, as before.
    (m,) = summarize([_held(w, h) for w, h in ((1.4, None), (1.0, 0.0), (1.05, 0.0))], warmup=0)
    assert [w for w in m.warnings() if "first run" in w] == [
        "the first run took 1.37× the median wall time of the others (cold caches?): "
        "consider --warmup 1"
    ]


def test_the_outlier_warning_says_only_what_is_true_of_each_metric() -> None:
    """avg CPU % and GPU util are neither ranked nor compared: their warning names the
    median and the mean only (it had said "the rankings discount it"); every metric compare
    tests is ranked, so the ranked text, which names compare, covers them all."""
    from edgeprof.analysis.compare import RANKED_METRICS, _what_discounts
    from edgeprof.analysis.regression import COMPARED

    for key in ("cpu_pct", "gpu_util_pct"):
        assert _what_discounts(key) == "the median discounts it, the mean ± sd do not"
    assert {m.stat for m in COMPARED if m.stat is not None} <= set(RANKED_METRICS)
    assert _what_discounts("peak_bytes").startswith("the median and the ranking's order")
    # The iterations' figures are compared too now: their warning names compare's change.
    for key in ("items_per_s", "latency_p50_s"):
        assert "compare's change" in _what_discounts(key), key
    assert "compare's change" in _what_discounts("peak_bytes")


def test_a_ranking_pair_called_within_noise_by_an_outlier_says_the_test_without_it() -> None:
    """The reviewer's CPU times (ms): one run of the first at 2.2× made the test of a 27 %
    difference p = 0.89, ≈ within noise; without it Welch gives p = 2.2e-5 on the values,
    5.4e-6 on the logarithms."""
    from edgeprof.model import Limits
    from edgeprof.report.comparison import ranking_tables
    from tests.unit.conftest import make_result

    runs = [
        make_result(name=n, wall_s=v / 1000, limits=Limits(cpus=1))
        for n, vs in (("100", (115, 251, 119, 115, 114)), ("130", (144, 146, 146, 156, 144)))
        for v in vs
    ]
    (wall,) = [
        t.plain() for t in ranking_tables(summarize_cells(runs)) if "by wall time" in t.title
    ]
    assert "≈ 100: within noise" in wall  # the verdict still tests every run
    assert (
        "100 ≈ 130: the test, its brackets and the runs needed include 100's run 2 (251.0ms), "
        "an outlier: without it the test says different (p = 5.4e-06; × PREVIOUS [1.22, 1.33])"
    ) in wall
    # No outlier, no line.
    quiet = [r for r in runs if r.wall_s != 0.251]
    (wall,) = [
        t.plain() for t in ranking_tables(summarize_cells(quiet)) if "by wall time" in t.title
    ]
    assert "an outlier" not in wall
