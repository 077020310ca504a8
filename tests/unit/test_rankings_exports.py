"""Rankings with factors and noise flags, exports, `edgeprof report`, plots, progress."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
from pathlib import Path

import pytest

from edgeprof.analysis.compare import rank, summarize, summarize_cells
from edgeprof.analysis.sweepfile import sweep_dict
from edgeprof.cli import main
from edgeprof.model import CpuStats, Limits, MemoryStats, RunResult
from edgeprof.report.comparison import _percent, ranking_tables
from edgeprof.report.export import cells_csv, runs_csv, text_cell
from edgeprof.report.progress import PlainProgress, TerminalProgress
from edgeprof.report.statistics_tables import statistics_tables
from edgeprof.resultfiles import SWEEP_SCHEMA, load_runs
from edgeprof.sweeps.labels import safe_dir
from edgeprof.sweeps.plan import SweepPlan
from tests.conftest import require_module
from tests.unit.conftest import make_result

MiB = 2**20


def _run(name: str, cpu_s: float, peak_mib: float, cpus: float = 1.0) -> RunResult:
    return make_result(
        name=name,
        limits=Limits(cpus=cpus),
        wall_s=cpu_s,
        cpu=CpuStats(
            user_s=cpu_s, system_s=0.0, total_s=cpu_s, avg_pct=100.0, peak_pct=100.0,
            peak_window_s=0.1, throttled_s=0.0, nr_throttled=0, nr_periods=1,
        ),
        memory=MemoryStats(
            peak_bytes=int(peak_mib * MiB), peak_source="kernel", avg_bytes=int(peak_mib * MiB),
            limit_bytes=None, oom_kills=0, peak_working_set_bytes=None,
            avg_working_set_bytes=None,
        ),
    )  # fmt: skip


def test_factor_and_its_uncertainty_hand_computed() -> None:
    runs = [_run("small", c, 100) for c in (1.0, 1.1, 0.9)]
    runs += [_run("big", c, 121) for c in (2.0, 2.4, 1.6)]
    small, big = rank(summarize(runs), "cpu_s")
    assert (small.name, big.name) == ("small", "big")
    # On the logarithms: means −0.00336 and 0.67879, sd 0.1001 and 0.2030, n 3; Welch: se
    # = 0.1307 at 2.90 degrees of freedom, 95 % t 3.22, half-width 0.421, around the
    # geometric means' ratio 1.978: [1.297, 3.021] (on the values it had been 2 ± 0.923)
    assert big.factor is not None and math.isclose(big.factor, 2.0)
    assert big.factor_interval == pytest.approx((1.2974, 3.0206), abs=1e-4)
    assert not big.within_noise and not big.close_memory
    peak = rank(summarize(runs), "peak_bytes")[1]
    assert peak.factor == pytest.approx(1.21)
    assert peak.factor_interval == pytest.approx((1.21, 1.21))  # no variance: no width
    text = ranking_tables(summarize_cells(runs))[2].plain()
    assert text.startswith("Ranking by peak memory under cpus=1 (smallest first)")
    # 1 − 1/1.21: 17 % less; "1.21× less" had read ambiguously.
    lead = "small used 17% less peak memory than big (ratio of the medians 1.21×; 95% interval,"
    assert lead in text


def test_factors_follow_the_order_of_the_medians() -> None:
    """One slow run lifts a's mean above b's; the ranking sorts by the median, and its
    factors are ratios of medians, so the second is never "0.9× less" than the first."""
    runs = [_run("a", c, 100) for c in (1.0, 1.0, 2.0)]  # median 1.0, mean 1.33
    runs += [_run("b", c, 100) for c in (1.1, 1.1, 1.1)]  # median 1.1, mean 1.1
    first, second = rank(summarize(runs), "cpu_s")
    assert (first.name, second.name) == ("a", "b")
    assert second.factor == pytest.approx(1.1) and second.step == pytest.approx(1.1)
    assert second.within_noise  # the means are closer than their noise
    text = ranking_tables(summarize_cells(runs))[1].plain()
    # On the logarithms the ratio's interval is exp of its bounds: above 0 (on the values
    # it had reached −0.25)
    assert (
        "a ≈ b in CPU time, within noise: ratio of the medians 1.10×; 95% interval, Welch's t "
        "on the logarithms, of the geometric mean over the first's: 0.32 to 2.36×"
    ) in text.splitlines()
    assert "≤0" not in text
    # A run of 0 CPU time: no logarithm, the test on the values.  a: σ 1, se 1/√3 at 2
    # degrees of freedom (b: none), 95 % t 4.30, half-width 2.484 around 0.1; over a's mean
    # 1.0, plus 1: [−1.38, 3.58], and a ratio of CPU times is never below 0: the runs set
    # no lower bound, which is said, not shown as a bound of 0.00
    runs = [_run("a", c, 100) for c in (0.0, 1.0, 2.0)]
    runs += [_run("b", c, 100) for c in (1.1, 1.1, 1.1)]
    text = ranking_tables(summarize_cells(runs))[1].plain()
    assert (
        "a ≈ b in CPU time, within noise: ratio of the medians 1.10×; 95% interval, Welch's t, "
        "of 1 + the difference of the means over the first's mean: ≤0 to 3.58×, no lower bound "
        "at this n"
    ) in text.splitlines()
    row = next(line for line in text.splitlines() if line.startswith("2  b"))
    assert "1.10× [≤0, 3.58]  1.10× [≤0, 3.58]" in row
    assert "≤0: the interval reaches below 0, no lower bound at this n" in text
    assert "a bracket beside a side with a figure of 0 (no logarithm) is the 95% interval" in text
    assert "0.00" not in text
    # An interval bounded below says nothing of it.
    separated = [_run("a", c, 100) for c in (1.0, 1.1, 0.9)]
    separated += [_run("b", c, 100) for c in (2.0, 2.1, 1.9)]
    assert "≤0" not in ranking_tables(summarize_cells(separated))[1].plain()


def test_within_noise_and_ten_mib_flags() -> None:
    runs = [_run("a", c, 100) for c in (1.0, 1.4, 0.6)]
    runs += [_run("b", c, 108) for c in (1.1, 1.5, 0.7)]
    cpu = rank(summarize(runs), "cpu_s")[1]
    assert cpu.within_noise  # 0.1 apart, σ 0.4 each
    mem = rank(summarize(runs), "peak_bytes")[1]
    # identical repeats (σ 0) but 8 MiB apart: not noise, yet close enough to flip on a device
    assert not mem.within_noise and mem.close_memory
    tables = {t.title.split(" under")[0]: t.plain() for t in ranking_tables(summarize_cells(runs))}
    assert "≈ a: within noise" in tables["Ranking by CPU time"]
    assert "≈ a: < 10 MiB apart, may flip on the device" in tables["Ranking by peak memory"]
    # The note under it says so too: "1.08× less" had stood bare beside the table's "≈".
    note = (
        "a used 7.4% less peak memory than b (ratio of the medians 1.08×; 95% interval, "
        "Welch's t on the logarithms, of the geometric mean over the first's: 1.08 to 1.08×; "
        "< 10 MiB apart, may flip on the device)"
    )
    assert note in tables["Ranking by peak memory"]
    # Its bracket excludes 1 beside the ≈ (a tester's "1.04× [1.02, 1.09]  ≈ 100: < 10 MiB
    # apart"): the legend gives both rules of the ≈, not only the bracket's.
    peak = tables["Ranking by peak memory"]
    assert "1.08× [1.08, 1.08]  ≈ a: < 10 MiB apart" in peak
    assert (
        "it covers 1 exactly where ≈ says within noise]; ≈ marks a model not told from the "
        "previous one by either of two rules (its NOTE says which): within noise, or a memory "
        "figure < 10 MiB apart, which may rank the other way on the device whatever the "
        "bracket; MEAN ± SD: one standard deviation"
    ) in peak


def test_rankings_are_per_limit_setting() -> None:
    runs = [_run("a", 1.0, 50, cpus=1), _run("b", 2.0, 60, cpus=1)]
    runs += [_run("a", 0.9, 80, cpus=2), _run("b", 0.5, 60, cpus=2)]
    cells = summarize_cells(runs)
    assert list(cells) == ["cpus=1", "cpus=2"]
    assert [r.name for r in rank(cells["cpus=1"], "cpu_s")] == ["a", "b"]
    assert [r.name for r in rank(cells["cpus=2"], "cpu_s")] == ["b", "a"]


def test_csv_and_sweep_json_exports(tmp_path: Path) -> None:
    runs = [_run("a", c, 100) for c in (1.0, 1.1, 0.9)] + [_run("b", 2.0, 120)]
    rows = list(csv.DictReader(io.StringIO(runs_csv(runs))))
    assert len(rows) == 4 and rows[0]["label"] == "a" and float(rows[0]["cpu_s"]) == 1.0
    assert rows[0]["peak_bytes"] == str(100 * MiB) and rows[0]["net_rx_bytes"] == ""
    assert rows[0]["command"] == "python3 infer.py"
    cells = list(csv.DictReader(io.StringIO(cells_csv(runs))))
    assert [(c["label"], c["runs"], c["cpu_s_n"]) for c in cells] == [
        ("a", "3", "3"),
        ("b", "1", "1"),
    ]
    assert math.isclose(float(cells[0]["cpu_s_mean"]), 1.0)
    assert math.isclose(float(cells[0]["cpu_s_sd"]), 0.1)
    assert float(cells[0]["cpu_s_median"]) == 1.0 and float(cells[0]["cpu_s_max"]) == 1.1
    assert cells[1]["cpu_s_sd"] == ""  # one value has no spread: not 0, which reads "no noise"
    table = statistics_tables(summarize_cells(runs))[0].plain()
    (b_row,) = [ln for ln in table.splitlines() if ln.startswith("b ")]
    assert "±" not in b_row and "2.00s" in b_row
    assert "1.00s ± 100.0ms" in table
    data = sweep_dict(runs)
    assert data["schema"] == SWEEP_SCHEMA and len(data["runs"]) == 4 and len(data["cells"]) == 2
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    assert [r.label for r in load_runs([path])] == ["a", "a", "a", "b"]



def test_csvs_carry_the_runs_latency_and_its_cell_medians() -> None:
    """runs.csv and cells.csv had no latency: p50/p95/p99, it/s and items/s of the run's own
    iterations, empty where a run had none (and items/s where no line gave ITEMS)."""
    import dataclasses

    from edgeprof.model import LatencyStats

    def lat(p50: float, items_per_s: float | None) -> LatencyStats:
        return LatencyStats(
            count=10, mean_s=p50, p50_s=p50, p90_s=2 * p50, p95_s=3 * p50, p99_s=4 * p50,
            max_s=5 * p50, per_s=1 / p50, items_per_s=items_per_s,
            items=None if items_per_s is None else 80,
        )

    runs = [dataclasses.replace(_run("a", 1.0, 100), latency=lat(p, 8 / p)) for p in (0.01, 0.03)]
    runs += [dataclasses.replace(_run("a", 1.0, 100), latency=lat(0.02, None))]
    runs += [_run("b", 1.0, 100)]  # no iterations reported
    rows = list(csv.DictReader(io.StringIO(runs_csv(runs))))
    assert float(rows[0]["latency_p50_s"]) == 0.01 and float(rows[0]["latency_p99_s"]) == 0.04
    assert float(rows[0]["it_per_s"]) == 100.0 and float(rows[0]["items_per_s"]) == 800.0
    assert rows[2]["items_per_s"] == "" and float(rows[2]["latency_p95_s"]) == 0.06
    assert [rows[3][k] for k in ("latency_p50_s", "it_per_s", "items_per_s")] == ["", "", ""]
    assert [float(r["latency_max_s"]) for r in rows[:3]] == [0.05, 0.15, 0.1]
    assert rows[3]["latency_max_s"] == ""
    # How many iterations each run completed (an OOM kill's "after N"); empty: none reported.
    assert [r["iterations"] for r in rows] == ["10", "10", "10", ""]
    killed = dataclasses.replace(runs[0], latency=dataclasses.replace(lat(0.01, None), count=125))
    [row] = csv.DictReader(io.StringIO(runs_csv([killed])))
    assert (row["iterations"], row["iterations_raised"]) == ("125", "0")
    a, b = csv.DictReader(io.StringIO(cells_csv(runs)))
    # a's max is its runs' largest (0.15 s), not their median (0.1 s): a worst case is one run's
    assert float(a["latency_max_s"]) == 0.15 and b["latency_max_s"] == ""
    # medians over a's three runs (items/s over the two that have it)
    assert float(a["latency_p50_s"]) == 0.02 and float(a["latency_p95_s"]) == 0.06
    assert float(a["it_per_s"]) == 50.0 and float(a["items_per_s"]) == (800 + 8 / 0.03) / 2
    assert (b["latency_p50_s"], b["items_per_s"]) == ("", "")
    assert list(a)[-1] == "warnings"


def test_csvs_carry_the_time_other_tasks_held_the_runs_off_their_cpus() -> None:
    """runs.csv had no column for the time other tasks held a run off its CPUs, nor for the
    wait for its core lease, and cells.csv no sign of either: a shared host's 0.74 s run, 61 %
    of it another user's, read as any other (a tester's).  ``held_s`` is result.json's;
    ``held_by_others_s`` leaves out the quota's stalls, as the run's warning does."""
    import dataclasses

    from edgeprof.model import CoreLease

    def held(held_s: float | None, throttled_s: float, exit_code: int = 0) -> RunResult:
        run = _run("a" if held_s is not None else "b", 1.0, 100)
        # 0.05 s of CPU time: others can have held it off the rest of its 1 s.
        cpu = dataclasses.replace(run.cpu, held_s=held_s, throttled_s=throttled_s, total_s=0.05)
        return dataclasses.replace(run, cpu=cpu, exit_code=exit_code)

    runs = [
        dataclasses.replace(held(0.61, 0.0), lease=CoreLease((0,), 2.5, True)),
        held(0.30, 0.25),  # 0.05 s of others': under a tenth of its 1 s, not warned of
        held(0.05, 0.2),  # a quota's stalls over several CPUs exceed `full`: 0, not -0.15
        held(0.9, 0.0, exit_code=1),  # failed: out of the cell's figures, as its statistics
        held(None, 0.0),  # no cpu.pressure
    ]
    rows = list(csv.DictReader(io.StringIO(runs_csv(runs))))
    assert [r["held_s"] for r in rows] == ["0.61", "0.3", "0.05", "0.9", ""]
    others = [float(r["held_by_others_s"]) for r in rows[:4]]
    assert others == pytest.approx([0.61, 0.05, 0.0, 0.9]) and rows[4]["held_by_others_s"] == ""
    assert [r["lease_waited_s"] for r in rows] == ["2.5", "", "", "", ""]
    # What the threads warning counts, beside pids_peak (empty: not scanned here).
    assert rows[0]["busy_tasks_peak"] == rows[0]["processes_at_peak"] == ""
    a, b = csv.DictReader(io.StringIO(cells_csv(runs)))
    assert (a["runs"], a["ok"], a["held_runs"]) == ("4", "3", "1")
    assert float(a["held_by_others_s"]) == pytest.approx(0.05)  # the median of 0.61, 0.05, 0
    assert (b["held_by_others_s"], b["held_runs"]) == ("", "")  # not measured: never 0
    assert list(a)[-3:] == ["held_by_others_s", "held_runs", "warnings"]


def test_runs_csv_joins_cells_csv_on_label_and_limits() -> None:
    """runs.csv had named a run's cell with the core leased for its integer --cpus
    (``cpus=1, cpuset=1, memory=256.0MiB``) where cells.csv wrote ``cpus=1, memory=256.0MiB``:
    a join on (label, limits) matched 0 of 6 rows.  The leased core stays in ``cpuset``."""
    import dataclasses

    from edgeprof.model import CoreLease

    def leased(core: int, chosen: bool = True) -> RunResult:
        run = _run("a", 1.0, 100)
        limits = Limits(cpus=1, cpuset=(core,), memory="256m")
        return dataclasses.replace(run, limits=limits, lease=CoreLease((core,), 0.0, chosen))

    runs = [leased(1), leased(0), leased(3, chosen=False)]
    rows = list(csv.DictReader(io.StringIO(runs_csv(runs))))
    assert [(r["limits"], r["cpuset"], r["run"]) for r in rows] == [
        ("cpus=1, memory=256.0MiB", "1", "1"),
        ("cpus=1, memory=256.0MiB", "0", "2"),
        ("cpus=1, cpuset=3, memory=256.0MiB", "3", "1"),  # an explicit --cpuset: its own cell
    ]
    cells = list(csv.DictReader(io.StringIO(cells_csv(runs))))
    keys = {(c["label"], c["limits"]) for c in cells}
    assert [(r["label"], r["limits"]) in keys for r in rows] == [True, True, True]
    assert [c["runs"] for c in cells] == ["2", "1"]


def test_runs_csv_ties_each_row_to_its_directory(tmp_path: Path) -> None:
    """The run's number within its cell (as the warnings count it: "run 2 failed") and its
    directory relative to the exports' (only started_at had tied a row to its samples.csv);
    ``dir`` is empty where the run's result.json is not there."""
    import dataclasses

    def at(run: RunResult, where: Path | None) -> RunResult:
        if where is not None:
            where.mkdir(parents=True)
            (where / "result.json").write_text("{}")
        path = None if where is None else str(where / "samples.csv")
        return dataclasses.replace(run, samples=dataclasses.replace(run.samples, path=path))

    out = tmp_path / "s1"
    runs = [
        at(_run("16", 1.0, 100), out / "16" / "1"),
        at(_run("64", 1.0, 100), out / "64" / "1"),
        at(_run("16", 1.0, 100), out / "16" / "2"),
        at(_run("16", 1.0, 100), tmp_path / "part-2" / "16" / "3"),  # a merged shard's run
        at(_run("64", 1.0, 100), None),
    ]
    rows = list(csv.DictReader(io.StringIO(runs_csv(runs, out))))
    assert [(r["label"], r["run"], r["dir"]) for r in rows] == [
        ("16", "1", "16/1"),
        ("64", "1", "64/1"),
        ("16", "2", "16/2"),
        ("16", "3", "../part-2/16/3"),
        ("64", "2", ""),
    ]
    assert list(rows[0])[-3:] == ["command", "run", "dir"]  # added last: positions kept
    assert [r["dir"] for r in csv.DictReader(io.StringIO(runs_csv(runs)))] == [""] * 5


def test_runs_csv_writes_bytes_as_integers() -> None:
    import dataclasses

    from edgeprof.model import GpuStats

    gpu = GpuStats(
        driver=None, selection=None, devices=(), memory_peak_bytes=2**30 + 1, energy_j=12.5,
        samples=10, interval_s=0.1, energy_per_item_j=0.125,
    )
    runs = [dataclasses.replace(_run("a", 1.0, 100), gpu=gpu), _run("b", 1.0, 100)]
    rows = list(csv.DictReader(io.StringIO(runs_csv(runs))))
    # A GPU peak had come out as 1073741825.0 beside the host peak's integer.
    assert rows[0]["gpu_peak_bytes"] == str(2**30 + 1) and rows[0]["energy_j"] == "12.5"
    assert rows[1]["gpu_peak_bytes"] == "" and rows[1]["peak_bytes"] == str(100 * MiB)

def test_report_rerenders_saved_results(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sweep"
    argv = ["run", "--backend", "fake", "--interval", "0.01", "--repeat", "2", "-m", "a,b",
            "--cpus", "1,2", "--out", str(out), "--", "sh", "-c", "sleep 0.05", "sh"]  # fmt: skip
    assert main(argv) == 0
    first = capfd.readouterr().out
    assert main(["report", str(out), "--out", str(tmp_path / "again"), "--markdown",
                 str(tmp_path / "r.md")]) == 0  # fmt: skip
    again = capfd.readouterr().out
    # The same tables come back from the files (times are read back, not re-measured).
    assert again == first
    for name in ("sweep.json", "runs.csv", "cells.csv", "report.md"):
        assert (tmp_path / "again" / name).is_file()
    # Each row's directory, from where its runs.csv is: the sweep's own and report's copy.
    dirs = [r["dir"] for r in csv.DictReader((out / "runs.csv").open())]
    assert dirs[:2] == ["a/cpus=1/1", "a/cpus=1/2"] and len(dirs) == 8
    copied = [r["dir"] for r in csv.DictReader((tmp_path / "again" / "runs.csv").open())]
    assert copied == [f"../sweep/{d}" for d in dirs]
    md = (tmp_path / "r.md").read_text()
    assert md.startswith("## edgeprof report\n\n### Final Usage Stats\n\n| NAME |")
    assert "\n### Ranking by CPU time under cpus=2" in md


def test_report_bad_input(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "x.json").write_text("{not json")
    assert main(["report", str(tmp_path / "x.json")]) == 2
    err = capfd.readouterr().err
    assert err.startswith("edgeprof: error: cannot read result") and err.count("\n") == 1


def test_plots_are_pngs(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    require_module("matplotlib", "plot")
    out = tmp_path / "sweep"
    argv = ["run", "--backend", "fake", "--interval", "0.01", "-m", "a,b", "--cpus", "1,2",
            "--out", str(out), "--plots", str(tmp_path / "plots"), "--",
            "sh", "-c", "sleep 0.1", "sh"]  # fmt: skip
    assert main(argv) == 0
    pngs = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert "peak_bytes.png" in pngs and "cpu_s.png" in pngs
    assert "timeline-a-cpus=1-run1.png" in pngs and len(pngs) == 5 + 4
    for p in (tmp_path / "plots").iterdir():
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000


def test_report_plots_say_which_timeline_a_corrupt_samples_csv_left_out(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """As the HTML report does: the run whose samples.csv is not a table is named, with
    why; the other run's timeline and the metric charts are drawn."""
    require_module("matplotlib", "plot")
    out = tmp_path / "sweep"
    argv = ["run", "--backend", "fake", "--interval", "0.01", "-m", "a,b", "--out", str(out),
            "--", "sh", "-c", "sleep 0.1", "sh"]
    assert main(argv) == 0
    bad = out / "b" / "1" / "samples.csv"
    bad.write_text("t_s,cpu_pct,memory_bytes\n0.1,fifty,1\n")
    capfd.readouterr()
    assert main(["report", str(out), "--plots", str(tmp_path / "plots")]) == 0
    err = capfd.readouterr().err
    note = f"timeline-b-none-run1.png: left out, {bad} is unreadable (line 2: a field is not"
    assert f"edgeprof: note: {note} a number (a sample is numbers))\n" in err
    pngs = {p.name for p in (tmp_path / "plots").iterdir()}
    assert {"timeline-a-none-run1.png", "cpu_s.png"} <= pngs
    assert "timeline-b-none-run1.png" not in pngs


@pytest.mark.parametrize("where", ["a-file", "a-file/below"])
def test_plots_that_cannot_be_written_are_refused_before_the_run(
    where: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Found after the run, the workload's time was spent for nothing (and no table)."""
    require_module("matplotlib", "plot")
    (tmp_path / "a-file").write_text("")
    marker = tmp_path / "ran"
    argv = ["run", "--backend", "fake", "--plots", str(tmp_path / where), "--", "touch",
            str(marker)]  # fmt: skip
    assert main(argv) == 2
    err = capfd.readouterr().err
    assert err.startswith("edgeprof: error: cannot write to output directory") and (
        err.count("\n") == 1
    )
    assert not marker.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_progress_renderers() -> None:
    plan = SweepPlan(("x",), models=("m",), repeat=2, warmup=1)
    steps = plan.steps()
    r = _run("m", 1.0, 10)
    plain = io.StringIO()
    progress = PlainProgress(plain)
    for s in steps:
        progress.start(s)
        progress.result(s, r)
    assert plain.getvalue().splitlines()[0] == (
        "edgeprof: [1/3] m [none] warm-up 1: 1.00s wall, 1.00s CPU, peak 10.0MiB, exited"
    )
    tty = io.StringIO()
    terminal = TerminalProgress(tty, len(steps))
    for s in steps:
        terminal.start(s)
        terminal.result(s, r)
    text = tty.getvalue()
    assert "[3/3]" in text and "warm-up 1" in text and "10.0MiB" in text


def test_a_run_without_a_model_is_named_by_its_program() -> None:
    """As its result's label names it, in the tables after: not "run", beside "run 1"."""
    (step,) = SweepPlan(("/usr/bin/python3", "x.py"), repeat=2).steps()[1:]
    plain = io.StringIO()
    PlainProgress(plain).result(step, _run("python3", 1.0, 10))
    assert plain.getvalue().startswith("edgeprof: [2/2] python3 [none] run 2: ")
    named = SweepPlan(("/usr/bin/python3",), repeat=2, name="mine").steps()[0]
    assert named.name == "mine"


def test_a_report_file_that_cannot_be_written_leaves_the_tables_shown(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk under --markdown: the tables had not been printed at all (exit 2, one
    error line); they come first now, the error under them."""
    from edgeprof.errors import ConfigError
    from edgeprof.report import run as report_run

    def full(*args: object) -> None:
        raise ConfigError("cannot write r.md: No space left on device")

    monkeypatch.setattr(report_run, "write_markdown", full)
    argv = ["run", "--backend", "fake", "--markdown", str(tmp_path / "r.md"), "--", "true"]
    assert main(argv) == 2
    out, err = capfd.readouterr()
    assert out.startswith("Final Usage Stats") and "true" in out
    assert err == "edgeprof: error: cannot write r.md: No space left on device\n"


def test_what_a_ranking_leaves_out_is_said_with_its_cause() -> None:
    """A model whose every run failed was in no ranking and no note; a model with one average
    memory among three successful runs was told to add repeats, which would not give more."""
    import dataclasses

    runs = [_run("a", c, 100) for c in (1.0, 1.1, 0.9)]
    runs += [_run("b", c, 120) for c in (2.0, 2.1, 1.9)]
    runs += [dataclasses.replace(_run("c", 0.5, 90), exit_code=3) for _ in range(3)]
    tables = {t.title.split(" under")[0]: t.plain() for t in ranking_tables(summarize_cells(runs))}
    assert "not ranked, every run failed: c (exit 3)" in tables["Ranking by CPU time"]
    short = [
        dataclasses.replace(r, memory=dataclasses.replace(r.memory, avg_bytes=None))
        if r.label == "b" and i % 3
        else r
        for i, r in enumerate(runs[:6])
    ]
    text = {t.title.split(" under")[0]: t.plain() for t in ranking_tables(summarize_cells(short))}
    assert (
        "not tested, a side with 1 figure of avg memory: a vs b (a finer --interval: runs "
        "shorter than two readings have none)"
    ) in text["Ranking by avg memory"]
    one = runs[:1] + runs[3:4]  # one run each: repeats are what would test the step
    text = {t.title.split(" under")[0]: t.plain() for t in ranking_tables(summarize_cells(one))}
    assert text["Ranking by CPU time"].splitlines()[-1] == (
        "not tested, a side with 1 figure of CPU time: a vs b (--repeat 3 or more, or "
        "--repeat auto)"
    )


def test_a_parts_untested_step_is_told_that_the_rankings_are_the_merged_sweeps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A part of --repeat 3 (one round each) had been told "--repeat 3 or more, or --repeat
    auto": it was given --repeat 3, and auto is refused with --shard."""
    one = [_run("a", 1.0, 100), _run("b", 2.0, 120)]
    tables = ranking_tables(summarize_cells(one), shard=(1, 3))
    text = {t.title.split(" under")[0]: t.plain() for t in tables}
    assert text["Ranking by CPU time"].splitlines()[-1] == (
        "not tested, a side with 1 figure of CPU time: a vs b (this part, shard 1/3, ran a "
        "share of the sweep's rounds: the rankings are the merged sweep's (edgeprof merge "
        "the parts))"
    )
    out = tmp_path / "part-1"
    argv = ["run", "--backend", "fake", "--repeat", "3", "--shard", "1/3", "-m", "a,b"]
    assert main([*argv, "--out", str(out), "--", "true"]) == 0
    said = capsys.readouterr().out
    assert "(this part, shard 1/3, ran a share of the sweep's rounds" in said
    assert "--repeat auto" not in said
    assert main(["report", str(out)]) == 0
    assert "(this part, shard 1/3, ran a share" in capsys.readouterr().out
    assert "(this part, shard 1/3, ran a share" in (out / "report.md").read_text()


def test_an_untested_step_is_told_its_cause_whichever_side_lacks_the_figure() -> None:
    """r2 of a statistician's review (--repeat 2): `100`, ranked first, had its average
    memory in 1 of its 2 runs, `200` in both; the note told the pair to repeat, not to read
    finer.  A pair short on one side and single on the other is told both."""
    import dataclasses

    def no_avg(r: RunResult) -> RunResult:
        return dataclasses.replace(r, memory=dataclasses.replace(r.memory, avg_bytes=None))

    runs = [_run("100", 1.0, 100), no_avg(_run("100", 1.1, 100))]
    runs += [_run("200", c, 120) for c in (2.0, 2.1)]
    cells = summarize_cells(runs)
    text = {t.title.split(" under")[0]: t.plain() for t in ranking_tables(cells)}
    assert text["Ranking by avg memory"].splitlines()[-1] == (
        "not tested, a side with 1 figure of avg memory: 100 vs 200 (a finer --interval: runs "
        "shorter than two readings have none)"
    )
    # The lead orders them by their medians alone, and says so (a verifier's "100 used 14%
    # less avg memory than 200" had read as a tested lead).
    (lead,) = [ln for ln in text["Ranking by avg memory"].splitlines() if " less " in ln]
    assert lead.startswith("100 used ") and lead.endswith(
        "not tested: a side has one figure, so by the medians alone)"
    )
    runs = [*runs[:2], _run("200", 2.0, 120), _run("300", 3.0, 130)]
    text = {t.title.split(" under")[0]: t.plain() for t in ranking_tables(summarize_cells(runs))}
    assert text["Ranking by avg memory"].splitlines()[-1] == (
        "not tested, a side with 1 figure of avg memory: 100 vs 200, 200 vs 300 (a finer "
        "--interval: runs shorter than two readings have none; --repeat 3 or more, or --repeat "
        "auto)"
    )


def test_a_lead_reads_in_percent_with_the_digits_that_show_it() -> None:
    """A statistician's "100 used 1.00× less peak memory than 200" (medians 0.1 % apart,
    told apart by the test): the percentage takes the digits that show it above 0."""
    runs = [_run("100", 1.0, p) for p in (100.0, 100.0, 100.0)]
    runs += [_run("200", 1.0, p) for p in (100.1, 100.1, 100.1)]
    tables = {t.title.split(" under")[0]: t.plain() for t in ranking_tables(summarize_cells(runs))}
    # The ratio to its bracket's decimals: 1.00× had stood outside [1.001, 1.001].
    lead = "100 used 0.1% less peak memory than 200 (ratio of the medians 1.001×; 95% interval"
    assert lead in tables["Ranking by peak memory"]
    fractions = (0.4217, 0.0741, 0.0004, 0.099)
    assert [_percent(f) for f in fractions] == ["42%", "7.4%", "0.04%", "9.9%"]


def test_equal_medians_are_said_the_same_not_one_times_less() -> None:
    """Two models with the same median had read "150 used 1.00 ± 0.00× less peak memory
    than 300"; the note says they used the same, and a lead still reads as one."""
    runs = [_run("150", c, 100) for c in (1.0, 1.0, 1.2)]
    runs += [_run("300", c, 100) for c in (1.0, 1.1, 1.0)]
    tables = {t.title.split(" under")[0]: t.plain() for t in ranking_tables(summarize_cells(runs))}
    peak = tables["Ranking by peak memory"]
    assert "150 and 300 used the same peak memory (median 100.0MiB)" in peak, peak
    assert "× less peak memory" not in peak
    assert "150 and 300 took the same CPU time (median 1.00s)" in tables["Ranking by CPU time"]


@pytest.mark.parametrize("label", ["=1+2", "+1", "-1", "@x"])
def test_a_csv_text_cell_a_spreadsheet_would_compute_is_prefixed(label: str) -> None:
    """Measured before: ``runs.csv`` and ``cells.csv`` had the label ``=1+2`` as is, which a
    spreadsheet computes (OWASP's CSV injection); the ``'`` makes it text.  Numbers stay
    numbers, a negative one included."""
    import dataclasses

    r = make_result(name=label, command=("=1+2", "a"))
    runs = [dataclasses.replace(r, cpu=dataclasses.replace(r.cpu, user_s=-0.5))]
    runs_rows = list(csv.DictReader(io.StringIO(runs_csv(runs))))
    cells_rows = list(csv.DictReader(io.StringIO(cells_csv(runs))))
    assert runs_rows[0]["label"] == cells_rows[0]["label"] == "'" + label
    assert runs_rows[0]["command"] == "'=1+2 a"
    assert runs_rows[0]["cpu_user_s"] == "-0.5"  # a number: no prefix
    assert runs_rows[0]["wall_s"] == "1.5" and runs_rows[0]["limits"] == r.limits.describe()
    # A tab or a carriage return first, OWASP's other two (no label holds one: jsoncheck).
    assert [text_cell(t) for t in ("\t=1", "\r=1", "a=1", "")] == ["'\t=1", "'\r=1", "a=1", ""]


def test_a_label_starting_a_formula_makes_a_directory_runs_csv_names_as_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An integrator's join: ``--name '=1+2,q é'`` had made the directory ``=1_2_q_é``, whose
    ``dir`` the formula guard wrote ``'=1_2_q_é/1``, naming nothing (``-m=-1``: ``'=-1/1``).
    The directory now starts with ``_``, so ``dir`` is as on disk; the label keeps the
    guard (a spreadsheet would compute ``=1+2``)."""

    monkeypatch.chdir(tmp_path)
    argv = ["run", "--backend", "fake", "--repeat", "2", "--out", "o"]
    assert main([*argv, "--name", "=1+2,q é", "--", "true"]) == 0
    rows = list(csv.DictReader((tmp_path / "o" / "runs.csv").open(encoding="utf-8")))
    assert [(r["label"], r["dir"]) for r in rows] == [
        ("'=1+2,q é", "_1_2_q_é/1"),
        ("'=1+2,q é", "_1_2_q_é/2"),
    ]
    assert all((tmp_path / "o" / r["dir"] / "result.json").is_file() for r in rows)
    assert main(["run", "--backend", "fake", "--out", "m", "-m=-1,+2,@x", "--", "true"]) == 0
    rows = list(csv.DictReader((tmp_path / "m" / "runs.csv").open(encoding="utf-8")))
    assert [(r["label"], r["dir"]) for r in rows] == [
        ("'=-1", "_-1/1"),
        ("'+2", "_2/1"),
        ("'@x", "_x/1"),
    ]


def test_a_directory_name_never_starts_with_a_formula_character() -> None:
    assert [safe_dir(x) for x in ("=1+2,q é", "=-1", "-1", "+2", "@x", "a=-1", ".=x")] == [
        "_1_2_q_é",
        "_-1",
        "_1",
        "_2",
        "_x",
        "a=-1",
        "_x",
    ]


def test_bytes_are_whole_numbers_in_cells_and_budgets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An integrator's int64 reader: cells.csv's ``peak_bytes_min`` read ``51990528.0``
    beside runs.csv's ``51990528``, and sweep.json's budgets ``52428800.0`` for
    ``--max-peak-memory 50m``.  A byte metric's ``min`` and ``max`` (a run's own value) and a
    size budget are whole numbers; the statistics (mean, median…) stay numbers that may hold
    a fraction, in every metric alike."""
    monkeypatch.chdir(tmp_path)
    argv = ["run", "--backend", "fake", "--repeat", "2", "--out", "o", "--max-peak-memory", "50m"]
    assert main([*argv, "--", "true"]) == 0
    data = json.loads((tmp_path / "o" / "sweep.json").read_text())
    assert data["budgets"]["overrides"] == {"peak_memory": 52428800}
    assert type(data["budgets"]["overrides"]["peak_memory"]) is int
    peaks = [r["memory"]["peak_bytes"] for r in data["runs"]]
    stats = data["cells"][0]["stats"]["peak_bytes"]
    assert (stats["min"], stats["max"]) == (min(peaks), max(peaks))
    assert type(stats["min"]) is type(stats["max"]) is int
    assert type(stats["mean"]) is type(stats["median"]) is float
    assert type(data["cells"][0]["stats"]["wall_s"]["min"]) is float
    (row,) = csv.DictReader((tmp_path / "o" / "cells.csv").open(encoding="utf-8"))
    assert row["peak_bytes_min"] == str(min(peaks)) and row["peak_bytes_max"] == str(max(peaks))
    # Read back (report, a merge, a report --out copy), the budget stays whole.
    assert main(["report", "o", "--out", "copy"]) == 0
    copy = json.loads((tmp_path / "copy" / "sweep.json").read_text())
    assert type(copy["budgets"]["overrides"]["peak_memory"]) is int


def test_a_name_the_plot_font_lacks_is_one_warning(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """``--name "modèle 日本"``'s charts had put 12 raw ``UserWarning: Glyph 26085 (…)
    missing from font(s) DejaVu Sans.`` lines on stderr, each with a source line of
    edgeprof's, and no word of edgeprof's own."""
    require_module("matplotlib", "plot")
    argv = ["run", "--backend", "fake", "--interval", "0.01", "-m", "modèle 日本,b",
            "--plots", str(tmp_path / "plots"), "--", "sh", "-c", "sleep 0.1", "sh"]  # fmt: skip
    assert main(argv) == 0
    err = capfd.readouterr().err
    assert "UserWarning" not in err and "Glyph" not in err
    assert err.count("edgeprof: warning: the plots' font") == 1
    assert (
        "edgeprof: warning: the plots' font (DejaVu Sans) has no 日 本 of the names: they "
        "show as empty boxes; install a font that has them (for Chinese, Japanese and Korean: "
        "fonts-noto-cjk)\n"
    ) in err


def test_other_warnings_while_plotting_are_left_as_they_were() -> None:
    import warnings

    from edgeprof.report.plots import MissingGlyphs

    glyphs = MissingGlyphs()
    with pytest.warns(DeprecationWarning, match="old"), glyphs.caught():
        warnings.warn("Glyph 26085 (\\N{CJK UNIFIED IDEOGRAPH-65E5}) missing from font(s) "
                      "DejaVu Sans.", UserWarning, stacklevel=1)  # fmt: skip
        warnings.warn("old", DeprecationWarning, stacklevel=1)
    assert list(glyphs.chars) == ["日"] and glyphs.fonts == "DejaVu Sans"


def test_matplotlib_gets_a_directory_of_edgeprofs_where_home_cannot_be_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only HOME had matplotlib's own two lines on stderr ("mkdir -p failed …
    Matplotlib created a temporary cache directory …"); the variable is matplotlib's only
    while it loads, so no workload inherits it."""
    import sys

    from edgeprof.report import plots

    blocked = tmp_path / "file"
    blocked.write_text("")  # its "matplotlib" directory cannot be made, even by root
    monkeypatch.setenv("XDG_CONFIG_HOME", str(blocked))
    monkeypatch.delenv("MPLCONFIGDIR", raising=False)
    monkeypatch.delitem(sys.modules, "matplotlib", raising=False)
    assert plots._mpl_dirs_writable() is False
    with plots._config_dir():
        made = Path(os.environ["MPLCONFIGDIR"])
        assert made.is_dir() and made.name.startswith("edgeprof-matplotlib-")
    assert "MPLCONFIGDIR" not in os.environ
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert plots._mpl_dirs_writable() is True
    with plots._config_dir():
        assert "MPLCONFIGDIR" not in os.environ  # matplotlib's own directories serve


def test_runs_csv_names_each_runs_device() -> None:
    """A team's sweeps of two boards had only their cpus to tell the rows apart (a
    tester's), where each result.json names its device."""
    runs = [dataclasses.replace(_run("a", 1.0, 100), device=d) for d in ("board-b", None)]
    rows = list(csv.DictReader(io.StringIO(runs_csv(runs))))
    assert [r["device"] for r in rows] == ["board-b", ""]
    header = runs_csv(runs).splitlines()[0].split(",")
    assert header.index("device") == header.index("memory_limit_bytes") + 1
